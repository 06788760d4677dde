"""`acpd policy check|explain|test`: functions the daemon's CLI registers and calls.

The arguments are declared in `cli_args.py`, which imports nothing heavy: the daemon's
parser includes them on every start, `serve` included.
Exit codes of `check`: 0 allow, 1 ask, 2 deny, 3 the policy could not be loaded; every action
exits 3 when the policy (or `test`'s corpus) cannot be read and 4 on any other failure, with
one line on stderr and never a traceback. Judging itself never fails: an input too large,
too deep or too slow to judge is ask or deny with a reason (exit 1 or 2).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy
from acpd.policy.reload import PolicyHandle
from acpd.policy.rules import PolicyError, Trust

EXIT = {"allow": 0, "ask": 1, "deny": 2}


EXIT_POLICY = 3
"""The policy could not be loaded (or, for `test`, the corpus could not be read)."""
EXIT_INTERNAL = 4
"""The command failed for another reason; the message says which (never a traceback)."""


def run(args: argparse.Namespace) -> int:
    """Run one `acpd policy ...` action. Never raises for bad input: the error is printed
    on one line to stderr and the exit code says what failed (see the module docstring)."""
    try:
        return _run(args)
    except PolicyError as exc:
        print(f"acpd policy: {exc}", file=sys.stderr)
        return EXIT_POLICY
    except CorpusError as exc:
        print(f"acpd policy test: {exc}", file=sys.stderr)
        return EXIT_POLICY
    except BrokenPipeError:  # `acpd policy check ... | head -1`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INTERNAL
    except (OSError, ValueError, RecursionError, MemoryError) as exc:
        print(f"acpd policy: {type(exc).__name__}: {exc}"[:2000], file=sys.stderr)
        return EXIT_INTERNAL


class CorpusError(Exception):
    """A corpus file that cannot be read or has a bad line."""


def _run(args: argparse.Namespace) -> int:
    plugins = [Path(p) for p in getattr(args, "plugins", [])]
    config = Path(args.config) if getattr(args, "config", None) else None
    if args.policy_command == "check":
        words = list(args.cmd)
        if words and words[0] == "--":
            words = words[1:]
        return check(" ".join(words) if len(words) != 1 else words[0], config=config,
                     cwd=args.cwd, as_json=args.json, trust=args.trust, plugin_dirs=plugins,
                     sandboxed=getattr(args, "sandboxed", False))
    if args.policy_command == "explain":
        return explain(config=config, plugin_dirs=plugins, as_json=args.json)
    return test_corpus(Path(args.file), config=config, plugin_dirs=plugins,
                       verbose=args.verbose)


def _handle(config: Path | None, plugin_dirs: list[Path], err: TextIO) -> PolicyHandle:
    handle = PolicyHandle(config, plugin_dirs)
    for e in handle.last_report.errors:
        print(f"policy: {e}", file=err)
    return handle


def check(command: str, *, config: Path | None = None, cwd: str | None = None,
          as_json: bool = False, trust: Trust | None = None,
          plugin_dirs: list[Path] | None = None, out: TextIO | None = None,
          err: TextIO | None = None, sandboxed: bool = False) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    handle = _handle(config, plugin_dirs or [], err)
    if config is not None and handle.last_report.kept_last_good:
        return 3
    workdir = os.path.abspath(cwd or os.getcwd())
    decision = handle.judge(command, cwd=workdir, roots=(workdir,), trust=trust,
                            sandboxed=sandboxed)
    if as_json:
        print(json.dumps(decision.to_json()), file=out)
    else:
        print(decision.verdict, file=out)
        for reason in decision.reasons:
            print(f"  - {reason}", file=out)
        print(f"  rules: {', '.join(decision.rules) or '-'}", file=out)
        print(f"  policy: {decision.policy_hash}", file=out)
    return EXIT[decision.verdict]


def describe(policy: CompiledPolicy) -> dict[str, Any]:
    pol = policy.policy
    return {
        "policy_hash": policy.hash,
        "sources": list(pol.sources),
        "settings": pol.policy.model_dump(),
        "paths": pol.paths.model_dump(),
        "blocklist": {"commands": list(pol.blocklist.commands), "env": list(pol.blocklist.env)},
        "network": list(pol.network.commands),
        "allowed_commands": None if pol.allowed_commands is None else list(pol.allowed_commands),
        "rules": [{"id": r.id, "verdict": r.verdict, "commands": list(r.commands),
                   "source": r.source} for r in pol.rules],
        "permissions": [{"pattern": g.pattern, "action": g.action,
                         "source": g.source or "tools.permissions.bash"}
                        for g in pol.glob_rules()],
    }


def explain(*, config: Path | None = None, plugin_dirs: list[Path] | None = None,
            as_json: bool = False, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    handle = _handle(config, plugin_dirs or [], err)
    info = describe(handle.current)
    if as_json:
        print(json.dumps(info, indent=2), file=out)
        return 0
    s = info["settings"]
    print(f"policy {info['policy_hash']} ({s['name']}): trust={s['trust']} "
          f"allow_network={s['allow_network']} default={s['default']}", file=out)
    print("sources: " + ", ".join(info["sources"]), file=out)
    print(f"blocked commands: {', '.join(info['blocklist']['commands']) or '-'}", file=out)
    print(f"network commands: {', '.join(info['network']) or '-'}", file=out)
    if info["allowed_commands"] is not None:
        print(f"allowed commands (overlays): {', '.join(info['allowed_commands'])}", file=out)
    print(f"deny_read: {', '.join(info['paths']['deny_read'])}", file=out)
    print(f"deny_write: {', '.join(info['paths']['deny_write'])}", file=out)
    for r in info["rules"]:
        print(f"  {r['verdict']:5} {r['id']:28} {' '.join(r['commands'])[:40]:40} "
              f"<- {r['source']}", file=out)
    for g in info["permissions"]:
        print(f"  {g['action']:5} pattern {g['pattern']!r} <- {g['source']}", file=out)
    return 0


def corpus_workspace() -> str:
    """A scratch workspace with the directories the corpus refers to."""
    ws = tempfile.mkdtemp(prefix="acpd-corpus-")
    for d in ("src", "victim", "build", "docs", "tests", "scripts", "target", "dist"):
        os.makedirs(os.path.join(ws, d), exist_ok=True)
    return ws


def run_corpus(policy: CompiledPolicy, lines: list[dict[str, Any]],
               cwd: str) -> dict[str, Any]:
    attacks = benign = design = 0
    attack_ok = benign_ok = design_ok = 0
    failures: list[dict[str, Any]] = []
    for item in lines:
        decision = policy.judge(item["cmd"], cwd=cwd, roots=(cwd,))
        expect = item["expect"]
        ok = decision.verdict == "allow" if expect == "allow" else (
            RANK[decision.verdict] >= RANK[expect])
        if item.get("category") == "design_fp":
            design += 1
            design_ok += ok
        elif expect == "allow":
            benign += 1
            benign_ok += ok
        else:
            attacks += 1
            attack_ok += ok
        if not ok:
            failures.append({"cmd": item["cmd"], "expect": expect, **decision.to_json()})
    return {"attacks": attacks, "attacks_ok": attack_ok, "benign": benign,
            "benign_ok": benign_ok, "design_fp": design, "design_fp_ok": design_ok,
            "failures": failures}


def read_corpus(path: Path) -> list[dict[str, Any]]:
    """The corpus lines (objects with a string `cmd` and an `expect` verdict). Raises
    CorpusError naming the file and line."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read ({exc})") from None
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except ValueError as exc:
            raise CorpusError(f"{path}:{number}: not JSON ({exc})") from None
        if not (isinstance(item, dict) and isinstance(item.get("cmd"), str)
                and item.get("expect") in EXIT):
            raise CorpusError(f"{path}:{number}: needs a string `cmd` and an `expect` of "
                              "allow, ask or deny")
        lines.append(item)
    return lines


def test_corpus(path: Path, *, config: Path | None = None,
                plugin_dirs: list[Path] | None = None, verbose: bool = False,
                out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    handle = _handle(config, plugin_dirs or [], err)
    lines = read_corpus(path)
    ws = corpus_workspace()
    try:
        res = run_corpus(handle.current, lines, ws)
    finally:
        shutil.rmtree(ws, ignore_errors=True)

    def rate(ok: int, n: int) -> str:
        return f"{ok}/{n} ({100.0 * ok / n:.1f} %)" if n else "0/0"

    print(f"attacks at least as strict as expected: {rate(res['attacks_ok'], res['attacks'])}",
          file=out)
    print(f"benign lines allowed: {rate(res['benign_ok'], res['benign'])}", file=out)
    print(f"design_fp lines (accepted false positives): "
          f"{rate(res['design_fp_ok'], res['design_fp'])}", file=out)
    if verbose:
        for f in res["failures"]:
            print(f"  FAIL expect={f['expect']} got={f['verdict']} {f['cmd']!r} {f['rules']}",
                  file=out)
    return 0 if not res["failures"] else 1
