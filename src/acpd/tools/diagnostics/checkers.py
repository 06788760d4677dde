"""Which checkers a workspace has, and the command line that runs each.

Detection reads a few files at the workspace root only (no walk): Cargo.toml (cargo check),
pyproject.toml with [tool.ruff] or ruff.toml/.ruff.toml (ruff), [tool.mypy] or mypy.ini/
.mypy.ini or setup.cfg's [mypy] (mypy), tsconfig.json (tsc), an eslint config file or
package.json's "eslintConfig" (eslint). clippy is never detected: ask for it, or configure it.
A checker's program is looked up in the workspace first (node_modules/.bin, .venv/bin), then
on PATH; none found: the checker is "missing" (an empty list and a warning, never an error).
The command lines are shell text: they are judged by the shell policy like any bash command.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass

from acpd.readcap import read_upto
from acpd.tools.diagnostics.config import CheckerName
from acpd.tools.diagnostics.parsers import (
    Diagnostic,
    parse_cargo,
    parse_eslint,
    parse_mypy,
    parse_ruff,
    parse_tsc,
)

ORDER: tuple[CheckerName, ...] = ("cargo", "clippy", "ruff", "mypy", "tsc", "eslint")
ESLINT_CONFIGS = ("eslint.config.js", "eslint.config.mjs", "eslint.config.cjs",
                  "eslint.config.ts", ".eslintrc", ".eslintrc.js", ".eslintrc.cjs",
                  ".eslintrc.json", ".eslintrc.yml", ".eslintrc.yaml")
MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Checker:
    name: CheckerName
    program: str
    args: tuple[str, ...]
    parse: Callable[[str], list[Diagnostic]]

    def command(self, program: str) -> str:
        return " ".join(shlex.quote(w) for w in (program, *self.args))


def _pyproject(root: str) -> dict[str, object]:
    path = os.path.join(root, "pyproject.toml")
    try:
        if os.path.getsize(path) > MAX_CONFIG_BYTES:
            return {}
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}
    tool = data.get("tool")
    return tool if isinstance(tool, dict) else {}


def _has(root: str, *names: str) -> bool:
    return any(os.path.isfile(os.path.join(root, n)) for n in names)


def _setup_cfg_has(root: str, section: str) -> bool:
    try:
        with open(os.path.join(root, "setup.cfg"), encoding="utf-8", errors="replace") as fh:
            return f"[{section}]" in fh.read(MAX_CONFIG_BYTES)
    except OSError:
        return False


def _package_json_has(root: str, key: str) -> bool:
    try:
        with open(os.path.join(root, "package.json"), "rb") as handle:
            return f'"{key}"'.encode() in read_upto(handle, MAX_CONFIG_BYTES - 1)
    except OSError:
        return False


def detect(root: str) -> list[CheckerName]:
    """The checkers `root`'s configuration asks for, in ORDER."""
    tool = _pyproject(root)
    found: list[CheckerName] = []
    if _has(root, "Cargo.toml"):
        found.append("cargo")
    if "ruff" in tool or _has(root, "ruff.toml", ".ruff.toml"):
        found.append("ruff")
    if "mypy" in tool or _has(root, "mypy.ini", ".mypy.ini") or _setup_cfg_has(root, "mypy"):
        found.append("mypy")
    if _has(root, "tsconfig.json"):
        found.append("tsc")
    if _has(root, *ESLINT_CONFIGS) or _package_json_has(root, "eslintConfig"):
        found.append("eslint")
    return found


def _mypy_args(root: str) -> tuple[str, ...]:
    base = ("--show-column-numbers", "--show-error-codes", "--no-pretty",
            "--no-error-summary", "--no-color-output")
    mypy = _pyproject(root).get("mypy")
    configured = isinstance(mypy, dict) and "files" in mypy
    return base if configured else (*base, ".")


def checker(name: CheckerName, root: str) -> Checker:
    if name in ("cargo", "clippy"):
        verb = "check" if name == "cargo" else "clippy"
        return Checker(name, "cargo", (verb, "--message-format=json", "--quiet"),
                       functools.partial(parse_cargo, source=name))
    if name == "ruff":
        return Checker(name, "ruff", ("check", "--output-format=json-lines", "--no-fix",
                                      "--exit-zero", "--no-cache", "."), parse_ruff)
    if name == "mypy":
        return Checker(name, "mypy", _mypy_args(root), parse_mypy)
    if name == "tsc":
        return Checker(name, "tsc", ("--noEmit", "--pretty", "false"), parse_tsc)
    return Checker(name, "eslint", ("-f", "json", "."), parse_eslint)


def find_program(program: str, root: str) -> str | None:
    """The workspace's own copy first (node_modules/.bin, .venv/bin: its absolute path, which
    the policy judges as the workspace code it is), then the bare name when PATH has it (the
    command's bash finds the same one: it inherits the daemon's PATH)."""
    for local in (os.path.join(root, "node_modules", ".bin", program),
                  os.path.join(root, ".venv", "bin", program)):
        if os.path.isfile(local) and os.access(local, os.X_OK):
            return local
    return program if shutil.which(program) else None
