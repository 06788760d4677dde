"""The hard cases: symlinks (never followed, restored as links), FIFOs and sockets, files
that cannot be read or saved, the caps, changes that keep size and mtime, a restart."""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

import pytest
from tests.checkpoint.conftest import RigFactory, tree, without_read_override

from acpd.checkpoint import CallRecord, Limits, UndoRefused, WorkspaceStore, undo_call
from acpd.checkpoint.entries import diff_manifests

pytestmark = pytest.mark.anyio


def stored_blobs(data_dir: Path) -> list[bytes]:
    return [p.read_bytes() for p in (data_dir / "checkpoints").glob("*/objects/*/*")]


async def test_symlinks_are_never_followed_and_are_restored_as_links(
    rig: RigFactory, tmp_path: Path, workspace: Path, data_dir: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE SECRET\n")
    os.symlink(outside, workspace / "out")
    os.symlink("../outside/secret.txt", workspace / "src" / "rel")
    os.symlink("missing-target", workspace / "dangling")
    before = tree(workspace)
    r = rig()
    await r.bash("rm out src/rel dangling")
    assert all(b"OUTSIDE SECRET" not in blob for blob in stored_blobs(data_dir))
    text = r.observer.text("call-1")
    assert "out (deleted, symlink -> " in text and "dangling (deleted" in text
    assert (await r.slash("")).startswith("Undid call-1")
    assert tree(workspace) == before
    assert os.readlink(workspace / "out") == str(outside)
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_a_forced_undo_never_writes_through_a_symlink_put_in_a_directory_s_place(
    rig: RigFactory, tmp_path: Path, workspace: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "main.py").write_text("outside original\n")
    r = rig()
    await r.bash("echo edited > src/main.py")
    shutil.rmtree(workspace / "src")  # anything, not only a call, may do this
    os.symlink(outside, workspace / "src")
    refused = await r.slash("call-1")
    assert refused.startswith("Undo refused") and "src/main.py" in refused
    said = await r.slash("call-1 --force")
    assert "Could not restore: src/main.py" in said
    assert (outside / "main.py").read_text() == "outside original\n"
    assert os.readlink(workspace / "src") == str(outside)


async def test_fifos_and_sockets_are_skipped_without_blocking(
    rig: RigFactory, workspace: Path
) -> None:
    os.mkfifo(workspace / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(workspace / "sock"))
    try:
        r = rig()
        result = await r.bash("echo x > made.txt; rm pipe")
        assert result.text.endswith("[files: 1 created (made.txt), 0 changed, 0 deleted]")
        assert (await r.slash("")).startswith("Undid call-1")
        assert not (workspace / "made.txt").exists()
        assert not (workspace / "pipe").exists()  # never saved, so never restored
    finally:
        server.close()


async def test_over_the_file_cap_is_shown_but_never_claimed_undoable(
    rig: RigFactory, workspace: Path
) -> None:
    (workspace / "big.bin").write_bytes(b"x" * 5000)
    r = rig("max_file_bytes = 1000")
    await r.bash("rm big.bin; echo changed > hello.txt")
    text = r.observer.text("call-1")
    assert "Cannot be undone (not saved): big.bin" in text
    assert "big.bin (deleted, too large to save)" in text
    refused = await r.slash("")
    assert refused.startswith("Undo refused") and "never saved: big.bin" in refused
    assert (workspace / "hello.txt").read_text() == "changed\n"
    forced = await r.slash("call-1 --force")
    assert "Not restored (their bytes were never saved): big.bin" in forced
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
    assert not (workspace / "big.bin").exists()


async def test_a_full_store_says_so_and_refuses_to_undo_what_it_did_not_save(
    rig: RigFactory, workspace: Path
) -> None:
    for n in range(5):
        (workspace / f"f{n}.txt").write_text(f"{n}" * 400)
    r = rig("max_total_bytes = 1200")
    await r.bash("rm f*.txt")
    text = r.observer.text("call-1")
    assert "the checkpoint store is full (1200 bytes)" in text
    assert "Cannot be undone (not saved): f" in text
    assert "never saved" in await r.slash("")


SCAN_AND_DELETE = """
import sys, pathlib, os
from acpd.checkpoint import Limits, WorkspaceStore
from acpd.checkpoint.store import CallRecord
from acpd.checkpoint.entries import diff_manifests
ws, data = sys.argv[1], pathlib.Path(sys.argv[2])
store = WorkspaceStore(data, ws, Limits())
before = store.checkpoint()
os.unlink(os.path.join(ws, "locked.txt"))
after = store.checkpoint()
changes = diff_manifests(before.entries, after.entries)
store.record(CallRecord("c1", "s", "bash", "rm", 0, 0, changes))
print(before.entries["locked.txt"].note)
"""


def test_an_unreadable_file_is_reported_and_its_deletion_not_undone(
    workspace: Path, data_dir: Path
) -> None:
    locked = workspace / "locked.txt"
    locked.write_text("nobody may read this\n")
    os.chmod(locked, 0o000)
    done = without_read_override(SCAN_AND_DELETE, str(workspace), str(data_dir))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "unreadable: Permission denied"
    store = WorkspaceStore(data_dir, str(workspace), Limits())
    with pytest.raises(UndoRefused, match=r"never saved: locked\.txt"):
        undo_call(store, "c1", undo_id="u1", session="s")
    store.close()


def test_a_change_that_keeps_size_and_mtime_is_still_seen(
    workspace: Path, data_dir: Path
) -> None:
    target = workspace / "hello.txt"
    store = WorkspaceStore(data_dir, str(workspace), Limits())
    time.sleep(0.01)
    store.checkpoint()
    st = target.stat()
    first = store.checkpoint()
    target.write_text("HELLO FROM THE WORKSPACE\n")  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert target.stat().st_mtime_ns == st.st_mtime_ns and target.stat().st_size == st.st_size
    second = store.checkpoint()
    (change,) = diff_manifests(first.entries, second.entries)
    assert change.path == "hello.txt" and change.action == "changed"
    store.close()


async def test_the_store_outlives_the_process_and_dedupes(
    rig: RigFactory, workspace: Path, data_dir: Path
) -> None:
    for n in range(3):
        (workspace / f"same{n}.txt").write_text("identical bytes\n")
    r = rig()
    await r.bash("rm same0.txt same1.txt same2.txt")
    assert sum(b == b"identical bytes\n" for b in stored_blobs(data_dir)) == 1
    assert r.pipeline.checkpoints is not None
    r.pipeline.checkpoints.close()
    again = WorkspaceStore(data_dir, str(workspace), Limits())
    result = undo_call(again, "call-1", undo_id="u1", session="s1")
    assert len(result.record.changes) == 3 and not result.failures
    assert (workspace / "same2.txt").read_text() == "identical bytes\n"
    again.close()


def test_a_store_inside_the_workspace_does_not_checkpoint_itself(workspace: Path) -> None:
    store = WorkspaceStore(workspace / ".acpd-data", str(workspace), Limits())
    first = store.checkpoint()
    (workspace / "new.txt").write_text("x")
    second = store.checkpoint()
    assert not any(p.startswith(".acpd-data/checkpoints/") for p in second.entries)
    assert set(second.entries) - set(first.entries) == {"new.txt"}
    store.close()


def test_a_scan_over_the_entry_cap_says_it_is_incomplete(workspace: Path, data_dir: Path) -> None:
    for n in range(30):
        (workspace / f"n{n}").write_text("")
    store = WorkspaceStore(data_dir, str(workspace), Limits(max_entries=10))
    result = store.checkpoint()
    assert not result.complete and any("more than 10 entries" in n for n in result.notes)
    store.close()


def test_a_first_checkpoint_over_its_time_budget_finishes_in_later_ones(
    workspace: Path, data_dir: Path
) -> None:
    for n in range(20):
        (workspace / f"f{n}.txt").write_text(f"file {n}\n")
    hurried = WorkspaceStore(data_dir, str(workspace), Limits(max_read_seconds=1e-9))
    first = hurried.checkpoint()
    assert first.out_of_time >= 20 and any("time budget" in n for n in first.notes)
    assert first.entries["f3.txt"].blob is None and not first.entries["f3.txt"].restorable
    hurried.close()
    store = WorkspaceStore(data_dir, str(workspace), Limits())
    second = store.checkpoint()
    assert second.out_of_time == 0 and all(
        e.blob is not None for p, e in second.entries.items() if e.kind == "f")
    store.close()


def test_kinds_swapped_and_the_longest_names_are_restored(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    long_name = "n" * 255
    (workspace / long_name).write_text("long\n")
    (workspace / "was_file").write_text("a file\n")
    os.mkdir(workspace / "was_dir", 0o705)
    (workspace / "was_dir" / "inner").write_text("inner\n")
    start = tree(workspace)
    store = WorkspaceStore(data_dir, str(workspace), Limits())
    before = store.checkpoint()
    (workspace / long_name).write_text("changed\n")
    os.unlink(workspace / "was_file")
    os.mkdir(workspace / "was_file")
    (workspace / "was_file" / "x").write_text("x\n")
    shutil.rmtree(workspace / "was_dir")
    os.symlink(tmp_path, workspace / "was_dir")
    after = store.checkpoint()
    store.record(CallRecord("c1", "s", "bash", "swap", 0, 0,
                            diff_manifests(before.entries, after.entries)))
    result = undo_call(store, "c1", undo_id="u1", session="s")
    assert not result.failures
    assert tree(workspace) == start
    store.close()


def test_undo_reads_the_call_s_paths_in_full_whatever_the_time_budget(
    workspace: Path, data_dir: Path
) -> None:
    store = WorkspaceStore(data_dir, str(workspace), Limits())
    before = store.checkpoint()
    (workspace / "hello.txt").write_text("edited\n")
    (workspace / "made.txt").write_text("made\n")
    after = store.checkpoint()
    store.record(CallRecord("c1", "s", "bash", "edit", 0, 0,
                            diff_manifests(before.entries, after.entries)))
    store.close()
    time.sleep(0.01)
    (workspace / "made.txt").write_text("made\n")  # same bytes, new stat: must be re-read
    hurried = WorkspaceStore(data_dir, str(workspace), Limits(max_read_seconds=1e-9))
    result = undo_call(hurried, "c1", undo_id="u1", session="s")
    assert not result.failures and not (workspace / "made.txt").exists()
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
    hurried.close()
