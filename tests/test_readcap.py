"""read_upto: at most cap + 1 bytes, without allocating the cap first."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from acpd.readcap import read_upto

CAP = 32 * 1024 * 1024


@pytest.mark.parametrize("size", [0, 1, 1000, 65536, 65537, 200_000])
def test_reads_the_whole_file_under_the_cap(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f"
    data = os.urandom(size)
    path.write_bytes(data)
    with path.open("rb") as fh:
        assert read_upto(fh, CAP) == data


@pytest.mark.parametrize(("size", "cap"), [(10, 10), (11, 10), (100, 10), (200_000, 70_000)])
def test_over_the_cap_reads_one_byte_more(tmp_path: Path, size: int, cap: int) -> None:
    path = tmp_path / "f"
    data = os.urandom(size)
    path.write_bytes(data)
    with path.open("rb") as fh:
        got = read_upto(fh, cap)
    assert got == data[: cap + 1]
    assert (len(got) > cap) == (size > cap)


def test_a_file_fstat_cannot_size(tmp_path: Path) -> None:
    """/proc files say size 0; a pipe has no size: read on in steps up to the cap."""
    with open("/proc/self/status", "rb") as fh:
        assert read_upto(fh, CAP).startswith(b"Name:")
    read_end, write_end = os.pipe()
    os.write(write_end, b"x" * 60_000)  # under the pipe's 64 KiB buffer
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        assert read_upto(fh, 50_000) == b"x" * 50_001


def test_reads_from_the_position_to_the_end(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"a" * 10)
    with path.open("rb") as fh:
        fh.seek(5)  # the hint is what is left from the position
        with path.open("ab") as grow:
            grow.write(b"b" * 100)
        assert read_upto(fh, CAP) == b"a" * 5 + b"b" * 100


def test_a_small_file_does_not_cost_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    tracemalloc.start()
    try:
        with path.open("rb") as fh:
            read_upto(fh, CAP)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # fh.read(CAP + 1) allocates 32 MiB here
