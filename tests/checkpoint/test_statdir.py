"""The checkpoint scanner's directory listing: the C form (statdir.c, as built by
scripts/build_native.py) answers exactly as the Python form does, and a scan made with either
finds the same entries. An entry that cannot be lstat'ed is a note and an incomplete scan, not
a failed one."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from tests.checkpoint.conftest import without_read_override

from acpd.checkpoint import Limits
from acpd.checkpoint.blobs import BlobStore
from acpd.checkpoint.scan import Scanner
from acpd.checkpoint.statdir import Listing, native_listing, python_listing

FIELDS = ("st_mode", "st_nlink", "st_size", "st_mtime_ns", "st_ctime_ns", "st_ino", "st_dev")

native = native_listing()
needs_native = pytest.mark.skipif(
    native is None, reason="statdir.c is not built here (scripts/build_native.py builds it)")


def _plain(listing: Listing) -> tuple[list[str], list[tuple[int, ...]], list[tuple[str, int]]]:
    names, stats, errors = listing
    return names, [tuple(getattr(st, f) for f in FIELDS) for st in stats], errors


def _every_kind(root: Path) -> Path:
    """A directory holding one entry of every kind, odd names, hard links and a subtree."""
    top = root / "top"
    top.mkdir()
    (top / "file.txt").write_text("x" * 1234)
    (top / "empty").touch()
    os.link(top / "file.txt", top / "hard-link")
    (top / "sub").mkdir()
    (top / "sub" / "deep").write_text("d")
    (top / "to-file").symlink_to("file.txt")
    (top / "dangling").symlink_to("nowhere")
    (top / "loop").symlink_to("loop")
    os.mkfifo(top / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(top / "sock"))
    os.chmod(top / "empty", 0o4751)
    (top / "spaces and\nnewline").touch()
    (top / "ünïcode-名前").touch()
    os.close(os.open(os.fsencode(top) + b"/not-utf8-\xff\xfe", os.O_CREAT | os.O_WRONLY, 0o600))
    os.close(os.open(top / ("n" * 255), os.O_CREAT | os.O_WRONLY, 0o600))
    return top


@needs_native
def test_the_c_listing_is_the_python_listing(tmp_path: Path) -> None:
    assert native is not None
    top = _every_kind(tmp_path)
    for directory in (top, top / "sub", tmp_path):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            got = _plain(native(fd))
            want = _plain(python_listing(fd))
            # The descriptor is left as it was found: a second listing sees everything.
            assert _plain(native(fd)) == got
            assert sorted(os.listdir(fd)) == sorted(got[0])
        finally:
            os.close(fd)
        assert got == want
    names = _plain(python_listing(os.open(top, os.O_RDONLY)))[0]
    assert "not-utf8-\udcff\udcfe" in names and "spaces and\nnewline" in names


@needs_native
def test_the_c_listing_refuses_what_is_not_a_directory(tmp_path: Path) -> None:
    assert native is not None
    (tmp_path / "f").touch()
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        with pytest.raises(NotADirectoryError):
            native(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError) as closed:
        native(fd)  # closed now
    assert closed.value.errno == 9
    with pytest.raises(TypeError):
        native("3")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        native(-1)


@needs_native
def test_a_scan_finds_the_same_entries_with_either_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = _every_kind(tmp_path)
    results = {}
    for form in ("1", "0"):
        monkeypatch.setenv("ACPD_NATIVE", form)
        blobs = BlobStore(str(tmp_path / f"blobs{form}"), 1 << 30)
        scanner = Scanner(str(top), blobs, Limits())
        first = scanner.scan({})
        (top / "sub" / "deep").write_text("changed")
        again = scanner.scan(first.entries)
        (top / "sub" / "deep").write_text("d")
        results[form] = (first, again)
    for (c_scan, py_scan) in zip(results["1"], results["0"], strict=True):
        assert c_scan.entries.keys() == py_scan.entries.keys()
        for path, entry in c_scan.entries.items():
            assert entry.state() == py_scan.entries[path].state(), path
        assert c_scan.skipped == py_scan.skipped and sorted(c_scan.skipped) == ["fifo", "sock"]
        assert c_scan.multi == py_scan.multi == {"file.txt", "hard-link"}
        assert c_scan.complete and py_scan.complete


UNSTATABLE = """
import sys
from acpd.checkpoint import Limits
from acpd.checkpoint.blobs import BlobStore
from acpd.checkpoint.scan import Scanner
result = Scanner(sys.argv[1], BlobStore(sys.argv[2], 1 << 30), Limits()).scan({})
print(result.complete, sorted(result.entries))
print(*result.notes, sep="\\n")
"""


@pytest.mark.parametrize("form", ["1", "0"])
def test_an_entry_that_cannot_be_lstated_is_a_note_not_a_failed_scan(
    tmp_path: Path, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory that may be read but not searched (mode 0644): its names are listed, but
    none can be lstat'ed (EACCES)."""
    ws = tmp_path / "ws"
    (ws / "closed").mkdir(parents=True)
    (ws / "closed" / "inside.txt").write_text("x")
    (ws / "open.txt").write_text("y")
    os.chmod(ws / "closed", 0o644)
    monkeypatch.setenv("ACPD_NATIVE", form)
    try:
        done = without_read_override(UNSTATABLE, str(ws), str(tmp_path / "blobs"))
    finally:
        os.chmod(ws / "closed", 0o755)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "False ['closed', 'open.txt']"
    assert "closed/inside.txt: cannot lstat (Permission denied)" in lines[1]


def test_the_built_extension_is_the_current_source() -> None:
    """A build is named by the digest of its source: an edited statdir.c is never loaded
    stale (it is not found, and the Python form runs until the next build)."""
    from acpd.checkpoint import statdir

    path = statdir.extension().current()
    if path is None:
        pytest.skip("statdir.c is not built here")
    assert f"acpd-statdir-{statdir.extension()._digest()}." in os.path.basename(path)


@needs_native
def test_the_c_scan_listing_keeps_only_what_the_scanner_would(tmp_path: Path) -> None:
    """scan_dir keeps a regular file's previous entry only for the scanner's own hot test
    (fast, and the same ctime, mtime, size, inode and device), at most `room` of them, and
    hands everything else back."""
    from acpd.checkpoint.entries import Entry
    from acpd.checkpoint.statdir import _module

    module = _module()
    assert module is not None
    top = _every_kind(tmp_path)
    (top / "changed").write_text("old")
    (top / "slow").write_text("s")

    def entry(name: str, *, fast: bool = True, size_delta: int = 0) -> Entry:
        st = os.lstat(top / name)
        return Entry("f", st.st_mode & 0o7777, st.st_size + size_delta, st.st_mtime_ns,
                     st.st_ctime_ns, st.st_ino, st.st_dev, "digest", fast=fast)

    previous = {"p/file.txt": entry("file.txt"), "p/hard-link": entry("hard-link"),
                "p/empty": entry("empty"), "p/changed": entry("changed", size_delta=1),
                "p/slow": entry("slow", fast=False)}
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        everything = set(python_listing(fd)[0])
        entries: dict[str, Entry] = {}
        multi: set[str] = set()
        names, stats, errors = module.scan_dir(fd, "p/", previous, entries, multi, 100)
        assert errors == [] and len(stats) == len(names)
        assert set(entries) == {"p/file.txt", "p/hard-link", "p/empty"}
        assert all(entries[k] is previous[k] for k in entries)
        assert multi == {"p/file.txt", "p/hard-link"}
        assert set(names) == everything - {"file.txt", "hard-link", "empty"}
        assert "changed" in names and "slow" in names  # a stat that differs; not fast
        # At most `room` kept; the rest come back.
        entries, multi = {}, set()
        names = module.scan_dir(fd, "p/", previous, entries, multi, 1)[0]
        assert len(entries) == 1 and len(names) == len(everything) - 1
        # An entry that is not one raises (a renamed field must not pass silently).
        with pytest.raises(AttributeError):
            module.scan_dir(fd, "p/", {"p/empty": object()}, {}, set(), 100)
        with pytest.raises(TypeError):
            module.scan_dir(fd, "p/", [], {}, set(), 100)
    finally:
        os.close(fd)
