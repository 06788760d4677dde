"""Speed-ups of the judge never change a verdict (issue 15, benchmarks/policy.py).

* Memoised pure computations (the parse of an identical text, option globs, protected
  paths): a warm engine gives every command of a large generated set the same decision as a
  fresh engine with every memo emptied before each decision.
* The per-decision path resolver (an lstat walk below a directory already known to be real,
  at most one resolution per path per decision) gives exactly `os.path.realpath` on trees
  full of symbolic links, dangling links, loops, files used as directories, missing parts.
* Nothing is remembered from one decision to the next: a component deep below the workspace
  root, or a parent of the root, swapped for a symbolic link between two decisions is seen.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpd.policy import effects, globmatch, parse, sandbox
from acpd.policy.decision import Decision
from acpd.policy.engine import CompiledPolicy, compile_policy
from acpd.policy.rules import load_base

from .conftest import CORPUS, REFERENCE


def _empty_memos() -> None:
    parse.clear_memo()
    globmatch.matcher.cache_clear()
    effects.protected_paths.cache_clear()


def _key(d: Decision) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    return d.verdict, d.rules, tuple(sorted(d.reasons))


def _generated(workspace: str, n: int, seed: int) -> list[str]:
    """Corpus lines, and the same lines respelled and combined (wrappers, separators,
    substitutions, paths inside, outside and behind deny lists)."""
    corpus = [json.loads(x)["cmd"] for x in CORPUS.read_text().splitlines() if x.strip()]
    r = random.Random(seed)
    paths = ["README.md", "src/a.py", "../x", "/etc/passwd", "~/.ssh/id_rsa", ".env",
             f"{workspace}/notes.txt", ".git/config", "build/out", "a b", "$HOME/x", "*.md"]
    shapes = ["cat {p}", "echo hi > {p}", "rm -rf {p}", "cp {p} {q}", "mv {p} {q}",
              "grep -r x {p}", "git show HEAD:{p}", "ls {p} | wc -l", "x={p}; cat $x",
              "sed -i s/a/b/ {p}", "tar -czf {p} {q}", "find {p} -name x"]
    wraps = ["{c}", "{c}", "true && {c}", "{c}; true", "( {c} )", "{{ {c}; }}", "env {c}",
             "timeout 3 {c}", "bash -c '{c}'", "if true; then {c}; fi", "echo x | {c}",
             "{c} &", "$(echo {c})", "nice {c}"]
    out = list(corpus)
    while len(out) < n:
        if r.random() < 0.5:
            cmd = r.choice(corpus)
        else:
            cmd = r.choice(shapes).format(p=r.choice(paths), q=r.choice(paths))
        out.append(r.choice(wraps).format(c=cmd.replace("'", "")))
    return out


def test_a_warm_engine_decides_as_a_fresh_one(reference: CompiledPolicy,
                                              workspace: str) -> None:
    cmds = _generated(workspace, 3000, seed=15)
    settings = [{"cwd": workspace, "roots": (workspace,)},
                {"cwd": workspace + "/src", "roots": (workspace,), "trust": "trusted"},
                {"cwd": "/", "roots": (workspace,), "trust": "untrusted"}]
    warm = reference
    for cmd in cmds:  # twice through: every memo holds what the second pass needs
        warm.judge(cmd, cwd=workspace, roots=(workspace,), budget_ms=10_000)
    warm_keys = [_key(warm.judge(cmd, budget_ms=10_000, **kw))  # type: ignore[arg-type]
                 for cmd in cmds for kw in settings]
    fresh = compile_policy(load_base(REFERENCE)[0])
    fresh_keys = []
    for cmd in cmds:
        for kw in settings:
            _empty_memos()
            fresh_keys.append(_key(fresh.judge(cmd, budget_ms=10_000, **kw)))  # type: ignore[arg-type]
    diff = [(c, w, f) for c, w, f in zip(itertools.product(cmds, range(len(settings))),
                                         warm_keys, fresh_keys, strict=True) if w != f]
    assert not diff, diff[:5]
    assert len({k[0] for k in fresh_keys}) == 3  # the set reaches allow, ask and deny


def test_the_parse_memo_is_bounded_and_keyed_on_the_exact_text() -> None:
    parse.clear_memo()
    a = parse.parse_memo("ls a")
    assert parse.parse_memo("ls a") is a
    assert parse.parse_memo("ls  a") is not a
    long = "echo " + "a" * parse.MEMO_MAX_CHARS
    assert parse.parse_memo(long) is not parse.parse_memo(long)
    for i in range(parse.MEMO_ENTRIES * 2):
        parse.parse_memo(f"ls {i}")
    assert len(parse._memo) <= parse.MEMO_ENTRIES


# -- the resolver ------------------------------------------------------------------------------


@pytest.fixture()
def tree() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="acpd-memo-", dir="/var/tmp"))
    try:
        yield Path(os.path.realpath(base))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _build(base: Path, r: random.Random) -> list[str]:
    """A random tree of directories, files and links (to dirs, files, outside, nowhere,
    themselves); returns candidate paths, most of them below `base/ws`."""
    ws = base / "ws"
    (base / "out" / "d").mkdir(parents=True)
    dirs = [ws]
    ws.mkdir()
    names = ["a", "b", "c", "d", "e"]
    for _ in range(25):
        parent = r.choice(dirs)
        child = parent / r.choice(names)
        if child.exists() or child.is_symlink():
            continue
        kind = r.random()
        if kind < 0.4:
            child.mkdir()
            dirs.append(child)
        elif kind < 0.6:
            child.write_text("x")
        else:
            target = r.choice([str(base / "out"), "..", ".", "../..", "nowhere", child.name,
                               str(r.choice(dirs)), "a/b", str(base / "out" / "d")])
            child.symlink_to(target)
    paths = []
    for _ in range(300):
        parts = [r.choice([*names, "x", ".git"]) for _ in range(r.randint(0, 6))]
        start = r.choice([str(ws), str(ws), str(base), "/", str(base / "out")])
        paths.append(os.path.normpath("/".join([start, *parts])))
    return paths


@pytest.mark.parametrize("seed", range(12))
def test_the_decision_resolver_is_realpath(tree: Path, seed: int) -> None:
    paths = _build(tree, random.Random(seed))
    previous = sandbox.open_decision()
    try:
        sandbox.normalized_roots((str(tree / "ws"),))
        got = [sandbox.resolve(p) for p in paths]
        again = [sandbox.resolve(p) for p in reversed(paths)][::-1]
    finally:
        sandbox.close_decision(previous)
    want = [os.path.realpath(p) for p in paths]
    assert got == want
    assert again == want
    assert [sandbox.resolve(p) for p in paths] == want  # outside a decision too


def test_a_deep_component_swapped_between_decisions_is_seen(default: CompiledPolicy,
                                                            tree: Path) -> None:
    ws, outside = tree / "ws", tree / "outside"
    (ws / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    for cmd in ("echo x > a/b/f", "cp README.md a/b/", "touch a/b/c/d/f", "rm -rf a/b/c"):
        first = default.judge(cmd, cwd=str(ws), roots=(str(ws),))
        assert first.verdict != "deny", (cmd, first)
        shutil.rmtree(ws / "a" / "b")
        (ws / "a" / "b").symlink_to(outside)
        second = default.judge(cmd, cwd=str(ws), roots=(str(ws),))
        assert second.verdict == "deny", (cmd, second)
        (ws / "a" / "b").unlink()
        (ws / "a" / "b").mkdir()
        assert _key(default.judge(cmd, cwd=str(ws), roots=(str(ws),))) == _key(first), cmd


def test_a_parent_of_the_root_swapped_between_decisions_is_seen(default: CompiledPolicy,
                                                                tree: Path) -> None:
    real, other = tree / "real", tree / "other"
    (real / "ws").mkdir(parents=True)
    (other / "ws").mkdir(parents=True)
    link = tree / "p"
    link.symlink_to(real)
    root = str(link / "ws")
    assert default.judge(f"echo x > {real}/ws/f", cwd=root).verdict == "allow"
    link.unlink()
    link.symlink_to(other)
    assert default.judge(f"echo x > {real}/ws/f", cwd=root).verdict == "deny"
    assert default.judge(f"echo x > {other}/ws/f", cwd=root).verdict == "allow"


def test_a_long_line_pauses_the_collector_only_while_it_is_judged(
        reference: CompiledPolicy, workspace: str) -> None:
    import gc
    import threading

    from acpd.policy import budget

    long = "ls; " * (budget.GC_PAUSE_CHARS // 2)
    shorter = "ls; " * (budget.GC_PAUSE_CHARS // 4 - 1)  # just under the pause

    def collections_while_judging(line: str) -> int:
        """Collections that start while the line is judged, with one due at nearly every
        allocation. (Observed through the collector, not by wrapping a judge function: the
        compiled judge's calls cannot be wrapped.)"""
        count = [0]

        def clock(phase: str, _info: dict[str, int]) -> None:
            if phase == "start" and budget.active():
                count[0] += 1

        threshold = gc.get_threshold()
        gc.set_threshold(1)
        gc.callbacks.append(clock)
        try:
            parse.clear_memo()
            reference.judge(line, cwd=workspace, roots=(workspace,))
        finally:
            gc.callbacks.remove(clock)
            gc.set_threshold(*threshold)
        return count[0]

    assert gc.isenabled()
    # (the few allocations between the budget's start and the pause, and after it, may each
    # start one; the judging itself, thousands of allocations, none)
    assert collections_while_judging(long) <= 4
    assert collections_while_judging(shorter) > 100
    assert gc.isenabled()
    threads = [threading.Thread(target=reference.judge, args=(long,),
                                kwargs={"cwd": workspace, "roots": (workspace,)})
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gc.isenabled()
    gc.disable()
    try:
        reference.judge(long, cwd=workspace, roots=(workspace,))
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()
