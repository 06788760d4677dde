"""What judging git's index-reading forms costs (issue 15, reads of deny_read files).

`git diff` and `git grep` make the judge read the repository's index, afresh for each
decision (no file-system fact is cached across decisions). This builds a repository of
FILES tracked files in a temporary directory and prints the decision medians of:

- `git status` (no index read): the baseline decision,
- `git diff`, `git grep x` with no tracked file that deny_read names (one read, one search),
- the same with a tracked `.env.example` (every entry parsed),
- `git diff --quiet` itself, run by git (the command the decision is for),

and the ratios of the index-reading decisions to the baseline and to git's own run.

    .venv/bin/python benchmarks/git_history.py [FILES]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from acpd.policy.engine import compile_policy
from acpd.policy.rules import load_base

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "b",
       "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def make_repo(root: str, files: int) -> str:
    ws = os.path.join(root, "ws")
    for k in range(files):
        path = os.path.join(ws, f"pkg{k // 100}", "sub", f"module_{k % 100}.py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write("x = 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "big"]):
        subprocess.run(["git", *args], cwd=ws, env=ENV, check=True)
    return os.path.realpath(ws)


def median_us(fn: object, runs: int) -> float:
    call = fn  # type: ignore[assignment]
    call()  # type: ignore[operator]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    policy = compile_policy(load_base(None)[0])
    with tempfile.TemporaryDirectory() as tmp:
        ws = make_repo(tmp, files)
        size = os.path.getsize(os.path.join(ws, ".git", "index"))

        def judge(cmd: str) -> object:
            return lambda: policy.judge(cmd, cwd=ws, roots=(ws,), trust="trusted")

        base = median_us(judge("git status"), 200)
        rows = [("git status (baseline)", base)]
        for cmd in ("git diff", "git grep x"):
            rows.append((f"{cmd}, no tracked secret", median_us(judge(cmd), 100)))
        with open(os.path.join(ws, ".env.example"), "w") as fh:
            fh.write("A=1\n")
        subprocess.run(["git", "add", "-f", ".env.example"], cwd=ws, env=ENV, check=True)
        for cmd in ("git diff", "git grep x"):
            rows.append((f"{cmd}, tracked .env.example", median_us(judge(cmd), 30)))
        git_run = median_us(lambda: subprocess.run(["git", "diff", "--quiet"], cwd=ws,
                                                   env=ENV, check=False), 20)
    print(f"repository: {files} tracked files, index {size // 1024} KiB")
    for name, us in rows:
        print(f"{name:36s} {us:10.0f} us  x{us / base:7.1f} baseline  "
              f"{us / git_run:5.2f} of git diff's own run")
    print(f"{'git diff --quiet, run by git':36s} {git_run:10.0f} us")


if __name__ == "__main__":
    main()
