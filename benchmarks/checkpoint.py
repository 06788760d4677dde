"""Checkpoint cost on a generated workspace of 10,000 files.

    .venv/bin/python benchmarks/checkpoint.py [--files N] [--rounds R]

Prints, for one workspace (N files in nested directories, 200 B to 8 KiB each), median and
p95 of each, all measured in the same run:
- the first checkpoint (every file read, hashed and saved into an empty store);
- one checkpoint when little changed (one file edited since the last): with the file
  watcher (acpd now: only what inotify reported is scanned) and the named baseline, the full
  scan (`Limits(watch=False)`: every path lstat'ed, acpd before the watcher), with the
  directories listed in C (statdir.c) and, as its baseline, in Python (`ACPD_NATIVE=0`);
- the whole per-command cost the runner adds to a bash call that edits one file: the
  checkpoint before, the checkpoint after, the diff, the card and the record
  (`Checkpoints.begin` then `Pending.finish`, thread hops included), for a command that ran
  in the kernel sandbox (watcher trusted after it), for one that did not (full scan after
  it; also with the Python listing), and with the watcher off (full scans both sides), next
  to the command itself
  (`bash -c` appending to the file, the named baseline for "added per command");
- more baselines: `git add -A && git write-tree` in a shadow repository (Gemini CLI's
  checkpointing) and a plain `os.walk` + `lstat` of every path.
Target: under 50 ms per command when little changed; the verdict is printed for the sandboxed
path and for the unconfined one (a full scan after the command) apart.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import anyio  # noqa: E402

from acpd.checkpoint import (  # noqa: E402
    Checkpoints,
    CheckpointSettings,
    Limits,
    WorkspaceStore,
)
from acpd.checkpoint.statdir import native_listing  # noqa: E402


def make_workspace(root: Path, files: int) -> list[Path]:
    rnd = random.Random(7)
    paths = []
    for n in range(files):
        folder = root / f"pkg{n % 40}" / f"mod{(n // 40) % 25}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file{n}.py"
        words = " ".join(rnd.choice(("def", "x", "return", "import", "class")) for _ in
                         range(rnd.randint(40, 1600)))
        path.write_text(f"# file {n}\n{words}\n")
        paths.append(path)
    return paths


def timed(action: Callable[[], object], rounds: int, before: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(rounds):
        before()
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return times


@contextlib.contextmanager
def python_listing() -> Iterator[None]:
    """Scans list directories in Python meanwhile (statdir.py reads ACPD_NATIVE at each
    walk): the named baseline of the C listing."""
    before = os.environ.get("ACPD_NATIVE")
    os.environ["ACPD_NATIVE"] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["ACPD_NATIVE"]
        else:
            os.environ["ACPD_NATIVE"] = before


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def walk_stat(root: Path) -> int:
    count = 0
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            os.lstat(os.path.join(folder, name))
            count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="acpd-bench-ckpt-"))
    try:
        return run(top, args.files, args.rounds)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run(top: Path, files: int, rounds: int) -> int:
    workspace = top / "ws"
    paths = make_workspace(workspace, files)
    counter = iter(range(10**9))

    def edit_one() -> None:
        n = next(counter)
        with paths[n % len(paths)].open("a") as f:
            f.write(f"# edit {n}\n")

    full_limits = Limits(watch=False)
    store = WorkspaceStore(top / "data", str(workspace), full_limits)
    start = time.perf_counter()
    first = store.checkpoint()
    first_ms = (time.perf_counter() - start) * 1000
    time.sleep(2.1)  # past the racy window, as a real session would be
    store.checkpoint()
    full = timed(store.checkpoint, rounds, edit_one)
    with python_listing():
        full_python = timed(store.checkpoint, rounds, edit_one)
    store.close()
    store = WorkspaceStore(top / "data", str(workspace), Limits())
    store.checkpoint(trust_watch=True)  # starts the watcher (a full scan)
    watched = timed(lambda: store.checkpoint(trust_watch=True), rounds, edit_one)
    kind = store.tracker.kind
    store.close()

    def per_command(limits: Limits, confined: bool) -> list[float]:
        book = Checkpoints(top / "data", CheckpointSettings(limits=limits))
        target = paths[next(counter) % len(paths)]
        command = ["bash", "-c", f"echo edit >> {target}"]

        async def one_command() -> float:
            start = time.perf_counter()
            pending = await book.begin("c", "s", "bash", "edit", str(workspace))
            begun = time.perf_counter()
            await anyio.run_process(command, check=True)
            ran = time.perf_counter()
            await pending.finish([], confined=confined)
            return (begun - start + time.perf_counter() - ran) * 1000

        anyio.run(one_command)  # the store is opened (and the watcher started) once
        try:
            return [anyio.run(one_command) for _ in range(rounds)]
        finally:
            book.close()

    command_ms = timed(lambda: subprocess.run(["bash", "-c", f"echo x >> {paths[0]}"],
                                              check=True), rounds, lambda: None)
    hook_sandboxed = per_command(Limits(), True)
    hook_unconfined = per_command(Limits(), False)
    with python_listing():
        hook_unconfined_python = per_command(Limits(), False)
    hook_full = per_command(full_limits, True)

    env = {**os.environ, "GIT_DIR": str(top / "shadow.git"), "GIT_WORK_TREE": str(workspace),
           "GIT_INDEX_FILE": str(top / "shadow.index")}
    subprocess.run(["git", "init", "-q", "--bare", str(top / "shadow.git")], check=True)
    git = ["sh", "-c", "git add -A && git write-tree >/dev/null"]
    start = time.perf_counter()
    subprocess.run(git, env=env, check=True)
    git_first_ms = (time.perf_counter() - start) * 1000
    git_ms = timed(lambda: subprocess.run(git, env=env, check=True), rounds, edit_one)
    walk_ms = timed(lambda: walk_stat(workspace), rounds, lambda: None)

    size = sum(p.stat().st_size for p in paths) / 1e6
    listing = "listed in C" if native_listing() is not None else "listed in Python (no build)"
    print(f"workspace: {files} files in {len(first.entries) - files} directories, {size:.1f} MB; "
          f"{rounds} rounds; load {os.getloadavg()[0]:.2f}")
    print(f"first checkpoint (empty store)          {first_ms:9.1f} ms")
    print(f"  baseline git add -A && write-tree      {git_first_ms:9.1f} ms")
    print("one file edited since the last checkpoint:        median      p95")
    rows = [
        (f"acpd checkpoint, file watcher ({kind})", watched),
        (f"baseline: acpd full scan (watch=False), {listing}", full),
        ("baseline: the same, listed in Python", full_python),
        ("baseline: git add -A && git write-tree", git_ms),
        ("baseline: os.walk + lstat", walk_ms),
        ("per bash call, added (before+after+diff+card+record):", []),
        ("  sandboxed command (watcher trusted after)", hook_sandboxed),
        ("  unconfined command (full scan after)", hook_unconfined),
        ("  baseline: the same, listed in Python", hook_unconfined_python),
        ("  baseline: watcher off (full scans)", hook_full),
        ("  the command itself: bash -c 'echo >> f'", command_ms),
    ]
    for name, values in rows:
        if not values:
            print(name)
            continue
        print(f"  {name:46s} {statistics.median(values):7.2f} ms {p95(values):7.2f} ms")
    median = statistics.median(watched)
    print(f"watched checkpoint / full scan: {median / statistics.median(full):.3f}x; "
          f"/ git baseline: {median / statistics.median(git_ms):.3f}x")
    # The target per command, said for each path a command can take: the watcher is
    # trusted only after a command confined by the sandbox.
    for name, values in (("sandboxed command", hook_sandboxed),
                         ("unconfined command (no sandbox, a plugin or MCP tool)",
                          hook_unconfined)):
        cost = statistics.median(values)
        print(f"target < 50 ms per command, {name}: {cost:.1f} ms, "
              f"{'met' if cost < 50 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
