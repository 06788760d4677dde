"""A directory inside the workspace is swapped for a symlink to an outside directory (a rename
dance in a thread) while thousands of reads run: no read may return outside content."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from acpd.tools.errors import ToolError
from acpd.tools.fs.reading import read_lines
from acpd.tools.fs.resolve import choose_resolver
from acpd.tools.fs.sandbox import Sandbox

READS = 4000
WRITES = 600
INSIDE, OUTSIDE = "inside\n", "OUTSIDE\n"


@pytest.fixture
def arena(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    ws, out = tmp_path / "ws", tmp_path / "out"
    (ws / "d").mkdir(parents=True)
    out.mkdir()
    (ws / "d" / "f.txt").write_text(INSIDE)
    (out / "f.txt").write_text(OUTSIDE)
    link = "../out" if request.param == "relative" else str(out)
    (ws / ".link").symlink_to(link)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield ws
    finally:
        sys.setswitchinterval(interval)


def swapping(ws: Path) -> tuple[threading.Event, threading.Thread, Counter[str]]:
    stop, swaps = threading.Event(), Counter[str]()

    def dance() -> None:
        d, real, link = ws / "d", ws / ".real", ws / ".link"
        while not stop.is_set():
            os.rename(d, real)
            os.rename(link, d)  # d is now the symlink to the outside directory
            os.rename(d, link)
            os.rename(real, d)  # d is the real directory again
            swaps["rounds"] += 1

    thread = threading.Thread(target=dance, daemon=True)
    thread.start()
    return stop, thread, swaps


WANTED = ("inside", "refused:PolicyBlocked")


def hammer(ws: Path, read: Callable[[], str]) -> Counter[str]:
    """READS reads while the directory is swapped, and on (up to ten times as many) until
    both states were met at least once: on a loaded machine the swapping thread can get few
    turns, and the test is about what a read meets, not how often."""
    stop, thread, swaps = swapping(ws)
    seen = Counter[str]()
    try:
        for k in range(READS * 10):
            if k >= READS and all(seen[w] for w in WANTED):
                break
            try:
                text = read()
            except ToolError as err:
                seen["refused:" + err.category.value] += 1
            except OSError:
                seen["os-error"] += 1
            else:
                seen["inside" if text == INSIDE else "OUTSIDE" if text == OUTSIDE else "other"] += 1
    finally:
        stop.set()
        thread.join()
    seen["swap-rounds"] = swaps["rounds"]
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("arena", ["relative", "absolute"], indirect=True)
def test_reads_never_leave_the_workspace_while_a_dir_is_swapped(
    arena: Path, resolver: str
) -> None:
    ws = arena
    with Sandbox([str(ws)], str(ws), resolver=choose_resolver(resolver)) as sb:
        def read() -> str:
            opened = sb.open_file("d/f.txt")
            return read_lines(opened.fd, None, None, "d/f.txt")

        seen = hammer(ws, read)
    print(f"\nrace[{resolver}]: {dict(seen)}")
    assert seen["OUTSIDE"] == 0 and seen["other"] == 0
    assert seen["inside"] > 0  # the real directory was read...
    assert seen["refused:PolicyBlocked"] > 0  # ...and the symlink state was met and refused


@pytest.mark.slow
@pytest.mark.parametrize("arena", ["relative"], indirect=True)
def test_writes_never_land_outside_while_a_dir_is_swapped(arena: Path, resolver: str) -> None:
    from acpd.tools.fs.atomic import write_atomic

    ws = arena
    stop, thread, _swaps = swapping(ws)
    outcomes = Counter[str]()
    try:
        with Sandbox([str(ws)], str(ws), resolver=choose_resolver(resolver)) as sb:
            # The real directory is in place in one state of the dance out of four: go on
            # past WRITES until a write has met it (on a busy machine 600 may not).
            deadline = time.monotonic() + 60
            i = 0
            while i < WRITES or (not outcomes["written"] and time.monotonic() < deadline):
                i += 1
                try:
                    entry = sb.write_target(f"d/new{i}.txt")
                    try:
                        write_atomic(entry.parent.fd, entry.name, b"x")
                    finally:
                        entry.close()
                    outcomes["written"] += 1
                except ToolError as err:
                    outcomes[err.category.value] += 1
    finally:
        stop.set()
        thread.join()
    print(f"\nwrite race[{resolver}]: {dict(outcomes)}")
    assert sorted(os.listdir(ws.parent / "out")) == ["f.txt"]
    assert outcomes["written"] > 0
