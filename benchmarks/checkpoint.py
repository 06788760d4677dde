"""Checkpoint cost on a generated workspace of 10,000 files.

    .venv/bin/python benchmarks/checkpoint.py [--files N] [--rounds R]

Prints, for one workspace (N files in nested directories, 200 B to 8 KiB each):
- the first checkpoint (every file read, hashed and saved into an empty store);
- one checkpoint when little changed (one file edited since the last), median and p90;
- the whole per-command cost the runner adds to a bash call that edits one file: the
  checkpoint before, the checkpoint after, the diff and the card (`Checkpoints.begin` then
  `Pending.finish`, thread hops included), median and p90;
and two named baselines measured in the same run on the same workspace:
- `git add -A && git write-tree` in a shadow repository outside the workspace (what Gemini
  CLI's checkpointing does per command), after the same one-file edit;
- a plain `os.walk` + `lstat` of every path (the least any stat-based checkpoint must do).
Target: under 50 ms per checkpoint when little changed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import anyio  # noqa: E402

from acpd.checkpoint import Checkpoints, Limits, WorkspaceStore  # noqa: E402


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


def p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9) - 1] if len(values) >= 10 else max(values)


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

    store = WorkspaceStore(top / "data", str(workspace), Limits())
    start = time.perf_counter()
    first = store.checkpoint()
    first_ms = (time.perf_counter() - start) * 1000
    time.sleep(2.1)  # past the racy window, as a real session would be
    store.checkpoint()
    ours = timed(store.checkpoint, rounds, edit_one)
    store.close()

    book = Checkpoints(top / "data")

    async def one_command() -> None:
        pending = await book.begin("c", "s", "bash", "edit", str(workspace))
        edit_one()
        await pending.finish([])

    hook = timed(lambda: anyio.run(one_command), rounds, lambda: None)
    book.close()

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
    print(f"workspace: {files} files in {len(first.entries) - files} directories, {size:.1f} MB")
    print(f"first checkpoint (empty store)          {first_ms:9.1f} ms")
    print(f"  baseline git add -A && write-tree      {git_first_ms:9.1f} ms")
    print("one file edited since the last checkpoint:   median      p90")
    rows = [
        ("acpd checkpoint", ours),
        ("acpd per command (before+after+card)", hook),
        ("baseline: git add -A && git write-tree", git_ms),
        ("baseline: os.walk + lstat", walk_ms),
    ]
    for name, values in rows:
        print(f"  {name:40s} {statistics.median(values):7.1f} ms {p90(values):7.1f} ms")
    median = statistics.median(ours)
    print(f"acpd checkpoint / git baseline: {median / statistics.median(git_ms):.2f}x; "
          f"/ os.walk+lstat: {median / statistics.median(walk_ms):.2f}x; "
          f"target < 50 ms: {'met' if median < 50 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
