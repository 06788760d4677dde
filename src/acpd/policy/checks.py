"""Named argument checks a rule can use (`check = "..."`): things a glob cannot say."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from acpd.policy.argspec import scan, spec_for
from acpd.policy.sandbox import inside
from acpd.policy.words import DYN


@dataclass(frozen=True, slots=True)
class CheckContext:
    cwd: str
    roots: tuple[str, ...]


Check = Callable[[str, list[str], CheckContext], bool]

_INLINE = frozenset({"-c", "-e", "-E", "-r", "-m", "-p", "--eval", "--print", "-i", "-n", "-a",
                     "-l", "-x"})


def script_in_workspace(name: str, args: list[str], ctx: CheckContext) -> bool:
    """`python3 scripts/x.py`, `sh ./build.sh`: the program runs a file from the workspace."""
    spec = spec_for(name)
    values = spec.value_options if spec else frozenset()
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--"):
        if args[i] in _INLINE:
            return False
        i += 2 if args[i] in values else 1
    if i < len(args) and args[i] == "--":
        i += 1
    if i >= len(args) or args[i] in ("-", DYN) or DYN in args[i]:
        return False
    path = args[i]
    full = os.path.normpath(path if path.startswith("/") else os.path.join(ctx.cwd, path))
    if "\x00" in full:  # no file has that name (and realpath would raise)
        return False
    real = os.path.realpath(full)
    return inside(full, ctx.roots) is not None and inside(real, ctx.roots) is not None


_SED_VALUES = frozenset({"-e", "-f", "-l", "-s", "--expression", "--file", "--line-length"})


def _sed_scripts(args: list[str]) -> list[str]:
    sc = scan(args, _SED_VALUES)
    scripts = [v or "" for o, v in sc.options if o in ("-e", "--expression")]
    if not scripts and not any(o in ("-f", "--file") for o, _ in sc.options) and sc.positionals:
        scripts.append(sc.positionals[0])
    return scripts


def _sed_commands(script: str) -> list[tuple[str, str]]:
    """(command letter, rest) for each command of a sed script, addresses skipped."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(script)
    while i < n:
        while i < n and script[i] in " \t\n;{}!":
            i += 1
        # address: numbers, $, /re/, \cREc, ranges, steps
        while i < n:
            ch = script[i]
            if ch.isdigit() or ch in "$,~+":
                i += 1
            elif ch == "/" or ch == "\\":
                delim = "/" if ch == "/" else (script[i + 1] if i + 1 < n else "/")
                i += 1 if ch == "/" else 2
                while i < n and script[i] != delim:
                    i += 2 if script[i] == "\\" else 1
                i += 1
                while i < n and script[i] in "IM":
                    i += 1
            else:
                break
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        cmd = script[i]
        i += 1
        if cmd in "sy":
            if i >= n:
                break
            delim = script[i]
            parts = 0
            i += 1
            while i < n and parts < 2:
                if script[i] == "\\":
                    i += 2
                    continue
                if script[i] == delim:
                    parts += 1
                i += 1
            start = i
            while i < n and script[i] not in ";\n}":
                i += 1
            out.append((cmd, script[start:i]))
        elif cmd in "aicrRwWbtTe:":
            start = i
            while i < n and script[i] != "\n" and not (cmd in "btT:" and script[i] == ";"):
                i += 1
            out.append((cmd, script[start:i]))
        else:
            out.append((cmd, ""))
    return out


def sed_exec(name: str, args: list[str], ctx: CheckContext) -> bool:
    """GNU sed runs commands with the `e` command or the `e` flag of `s`; `w`/`W` write."""
    for script in _sed_scripts(args):
        if DYN in script:
            return True
        for cmd, rest in _sed_commands(script):
            if cmd in "eWw":
                return True
            if cmd == "s" and re.match(r"^[gpIiMm0-9]*[ew]", rest):
                return True
    return False


_AWK_EXEC = re.compile(r"\bsystem\s*\(|\|\s*(getline|&)|\|\s*\"|\"\s*\|\s*getline|\|&"
                       r"|\bprint[f]?\b[^;}]*\|")


def awk_exec(name: str, args: list[str], ctx: CheckContext) -> bool:
    """awk runs commands through system(), `print | "cmd"` and `"cmd" | getline`."""
    sc = scan(args, frozenset({"-v", "-F", "-f", "--assign", "--field-separator", "--file"}))
    if any(o in ("-f", "--file") for o, _ in sc.options):
        return True
    program = sc.positionals[0] if sc.positionals else ""
    return DYN in program or bool(_AWK_EXEC.search(program))


_PUSH_VALUES = frozenset({"-o", "--push-option", "--repo", "--receive-pack", "--exec"})


def _push_remote(args: list[str]) -> str | None:
    """The remote of `git ... push ...`, or None when it is the default."""
    try:
        k = args.index("push")
    except ValueError:
        return None
    sc = scan(args[k + 1 :], _PUSH_VALUES)
    repo = [v for o, v in sc.options if o == "--repo" and v]
    if repo:
        return repo[-1]
    return sc.positionals[0] if sc.positionals else None


def push_origin(name: str, args: list[str], ctx: CheckContext) -> bool:
    remote = _push_remote(args)
    return remote is None or remote == "origin"


def push_not_origin(name: str, args: list[str], ctx: CheckContext) -> bool:
    return not push_origin(name, args, ctx)


_CONFIG_WRITE = ("--add", "--unset", "--unset-all", "--replace-all", "--edit", "-e",
                 "--rename-section", "--remove-section", "--global", "--system", "--file", "-f",
                 "--worktree")


def git_config_write(name: str, args: list[str], ctx: CheckContext) -> bool:
    """`git config KEY VALUE` and friends write .git/config (or ~/.gitconfig)."""
    try:
        k = args.index("config")
    except ValueError:
        return False
    rest = args[k + 1 :]
    sc = scan(rest, frozenset({"--file", "-f", "--blob", "--type", "--default"}))
    if any(o in _CONFIG_WRITE for o, _ in sc.options):
        return True
    pos = sc.positionals
    if pos and pos[0] in ("set", "unset", "edit", "rename-section", "remove-section"):
        return True
    return len(pos) >= 2 and not any(o in ("--get", "--get-all", "--get-regexp", "-l", "--list")
                                     for o, _ in sc.options)


CHECKS: dict[str, Check] = {
    "script-in-workspace": script_in_workspace,
    "sed-exec": sed_exec,
    "awk-exec": awk_exec,
    "push-origin": push_origin,
    "push-not-origin": push_not_origin,
    "git-config-write": git_config_write,
}
