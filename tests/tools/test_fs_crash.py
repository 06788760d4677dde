"""kill -9 during a stream of writes: every file is afterwards a whole version, never torn, and
the temp files the dead writer left are neither shown by the tools nor kept by the next write."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from acpd.tools.fs import FileToolsConfig
from tests.tools.conftest import Tools, make_ctx

FILES = 12
SIZE = 256 * 1024
ROUNDS = 4

WRITER = r"""
import os, signal, sys, anyio
from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
from acpd.tools.fs import make_fs_specs
from acpd.tools.spec import ToolContext

ws, files, size, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
die_in = sys.argv[5] if len(sys.argv) > 5 else ""  # "write" or "replace": kill -9 ourselves there
writes = 0

def dying(real):
    def call(*args, **kwargs):
        if writes >= files + 1:
            if real is os.write:
                real(args[0], bytes(args[1])[: len(args[1]) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return call

if die_in:
    setattr(os, die_in, dying(getattr(os, die_in)))

def body(i, v):
    unit = f"<{i}:{v}>"
    return unit * (size // len(unit))

async def nothing(*_a):
    return None

async def main():
    spec = {s.name: s for s in make_fs_specs()}["write"]
    ctx = ToolContext("c", ws, (ws,), LocalFileSystem(), LocalCommandRunner(), nothing,
                      lambda _f: None)
    global writes
    v = start
    while True:
        v += 1
        for i in range(files):
            await spec.execute(spec.params.model_validate(
                {"path": f"f{i}.txt", "content": body(i, v)}), ctx)
            writes += 1
            print(i, v, flush=True)

anyio.run(main)
"""


def body(i: int, v: int) -> str:
    unit = f"<{i}:{v}>"
    return unit * (SIZE // len(unit))


def version_of(i: int, text: str) -> int:
    """The version a file holds; fails the test when it is not exactly one whole version."""
    match = re.match(rf"<{i}:(\d+)>", text)
    assert match, f"f{i}.txt does not start with a version marker"
    v = int(match.group(1))
    assert text == body(i, v), f"f{i}.txt is torn (version {v}, {len(text)} chars)"
    return v


@pytest.mark.slow
def test_kill_9_mid_stream_leaves_old_or_new(ws: Path) -> None:
    for i in range(FILES):
        (ws / f"f{i}.txt").write_text(body(i, 0))
    tools = Tools(make_ctx(ws), FileToolsConfig())
    version = 0
    leftovers = 0
    for round_ in range(ROUNDS):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(ws), str(FILES), str(SIZE), str(version)],
            stdout=subprocess.PIPE, text=True,
        )
        assert proc.stdout is not None
        target = FILES + 3 * round_ + 1  # kill at a different point of the stream each round
        last = None
        for _ in range(target):
            line = proc.stdout.readline()
            assert line, "the writer died on its own"
            last = tuple(map(int, line.split()))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL and last is not None
        versions = [version_of(i, (ws / f"f{i}.txt").read_text()) for i in range(FILES)]
        # Acknowledged writes are on disk; the rest hold the previous or the next version.
        done_i, done_v = last
        for i, v in enumerate(versions):
            expected_min = done_v if i <= done_i else done_v - 1
            assert v in (expected_min, expected_min + 1), (i, v, last)
        version = max(versions)
        temps = [p.name for p in ws.iterdir() if ".acpd-" in p.name]
        leftovers += len(temps)
        assert all(re.fullmatch(rf"\.f\d+\.txt\.acpd-{proc.pid}-[0-9a-f]{{8}}\.tmp", t)
                   for t in temps)
        # The tools never present a temp file as a real one...
        listing = tools("list_directory", path=".").text
        found = tools("find_path", path=".", pattern="*").text
        grepped = tools("grep", pattern=f"<0:{version + 1}>").text
        assert ".acpd-" not in listing + found + grepped
        # ...and the next write into the directory removes what the dead writer left.
        tools("write", path="f0.txt", content=body(0, version))
        assert [p.name for p in ws.iterdir() if ".acpd-" in p.name] == []
    print(f"\ncrash: {ROUNDS} kills, {leftovers} stale temp files found and removed")


@pytest.mark.slow
@pytest.mark.parametrize("where", ["write", "replace"])
def test_kill_9_inside_a_write_keeps_the_old_file(ws: Path, where: str) -> None:
    """The writer kills itself half-way through writing the temp file, or just before the
    rename: the file keeps its old content and the temp file is cleaned by the next write."""
    for i in range(FILES):
        (ws / f"f{i}.txt").write_text(body(i, 0))
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, str(ws), str(FILES), str(SIZE), "0", where],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    acknowledged = proc.stdout.split("\n")[-2].split()
    assert acknowledged == ["0", "2"]  # f0..f11 at version 1, then f0 at version 2
    assert version_of(0, (ws / "f0.txt").read_text()) == 2
    assert version_of(1, (ws / "f1.txt").read_text()) == 1  # the interrupted write: old
    temps = [p for p in ws.iterdir() if ".acpd-" in p.name]
    assert len(temps) == 1 and temps[0].name.startswith(".f1.txt.acpd-")
    partial = temps[0].read_text()
    assert partial != body(1, 2) if where == "write" else partial == body(1, 2)
    tools = Tools(make_ctx(ws), FileToolsConfig())
    assert ".acpd-" not in tools("find_path", path=".", pattern="*").text
    tools("write", path="f5.txt", content="next\n")
    assert [p.name for p in ws.iterdir() if ".acpd-" in p.name] == []
