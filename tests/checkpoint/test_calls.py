"""Checkpoints around real calls: what the card and the model are shown, and undo of bash
and of each file tool, byte for byte and mode for mode."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.checkpoint.conftest import RigFactory, tree

pytestmark = pytest.mark.anyio


def git(workspace: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(workspace), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True, capture_output=True, text=True,
    ).stdout


async def test_bash_that_creates_changes_and_deletes_shows_all_three(
    rig: RigFactory, workspace: Path
) -> None:
    r = rig()
    result = await r.bash("echo new > made.txt; echo changed >> hello.txt; rm src/main.py")
    assert result.error is None
    diffs = r.observer.diffs("call-1")
    made, hello, main = (str(workspace / p) for p in ("made.txt", "hello.txt", "src/main.py"))
    assert set(diffs) == {made, hello, main}
    assert diffs[made].old_text is None and diffs[made].new_text == "new\n"
    assert diffs[hello].old_text == "hello from the workspace\n"
    assert diffs[hello].new_text == "hello from the workspace\nchanged\n"
    assert diffs[main].old_text == "print('hi')\n" and diffs[main].new_text == ""
    assert "Files: 1 created, 1 changed, 1 deleted" in r.observer.text("call-1")
    assert "/undo call-1" in r.observer.text("call-1")
    assert result.text.endswith(
        "[files: 1 created (made.txt), 1 changed (hello.txt), 1 deleted (src/main.py)]")


async def test_a_command_that_changes_nothing_adds_nothing(rig: RigFactory) -> None:
    r = rig()
    result = await r.bash("echo quiet")
    assert "[files:" not in result.text
    assert r.observer.diffs("call-1") == {}
    assert "Nothing to undo" in await r.slash("")


async def test_rm_rf_git_and_src_is_undone_byte_for_byte(
    rig: RigFactory, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Unconfined, as where no sandbox is available: the sandbox would keep .git/config and
    # hooks (read-only mounts), and this is about undoing a whole deletion.
    monkeypatch.setenv("ACPD_SANDBOX", "off")
    git(workspace, "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "first")
    (workspace / "src" / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    os.chmod(workspace / "src" / "tool.sh", 0o750)
    os.chmod(workspace / "src", 0o711)
    (workspace / "src" / "blob.bin").write_bytes(bytes(range(256)) * 40)
    before = tree(workspace)
    r = rig()
    r.observer.answer = "allow_once"  # deleting .git content asks first, whatever allows rm
    result = await r.bash("rm -rf .git src")
    assert result.error is None and not (workspace / ".git").exists()
    files = sum(1 for p, v in before.items() if v[0] != "d" and p.startswith((".git/", "src/")))
    assert f"0 created, 0 changed, {files} deleted" in r.observer.text("call-1")
    assert f"[files: 0 created, 0 changed, {files} deleted (src/blob.bin, src/main" in result.text
    assert len(r.observer.diffs("call-1")) == 20  # the cap; the rest are listed by name
    assert ".git/refs/heads/master (deleted)" in r.observer.text("call-1")  # past the cap
    said = await r.slash("")
    assert said.startswith("Undid call-1"), said
    assert tree(workspace) == before
    assert git(workspace, "status", "--porcelain") == "?? src/blob.bin\n?? src/tool.sh\n"


async def test_each_file_tool_is_undone(rig: RigFactory, workspace: Path) -> None:
    r = rig()
    start = tree(workspace)
    await r.call("write", {"path": "new.txt", "content": "fresh\n"})
    await r.call("edit", {"path": "hello.txt", "old_string": "hello", "new_string": "bye"})
    await r.call("move_path", {"source": "src/main.py", "destination": "lib/main.py"})
    await r.call("delete_path", {"path": "new.txt"})
    await r.call("create_directory", {"path": "empty/deep"})
    assert [r.observer.statuses[i] for i in r.ids] == ["completed"] * 5
    # The file tools' own diffs are not repeated by the checkpoint's.
    assert len(r.observer.diffs("call-1")) == 1
    assert (workspace / "lib" / "main.py").exists() and not (workspace / "new.txt").exists()
    for expected in ("call-5", "call-4", "call-3", "call-2", "call-1"):
        said = await r.slash("")
        assert said.startswith(f"Undid {expected}"), said
    assert tree(workspace) == start


async def test_a_later_change_makes_undo_refuse_until_forced(
    rig: RigFactory, workspace: Path
) -> None:
    r = rig()
    await r.bash("echo one > hello.txt")
    await r.bash("echo two > hello.txt")
    said = await r.slash("call-1")
    assert said.startswith("Undo refused") and "hello.txt" in said and "call-2" in said
    assert (workspace / "hello.txt").read_text() == "two\n"
    (workspace / "hello.txt").write_text("by hand\n")  # the user, not a call
    assert "Undo refused" in await r.slash("call-2")
    assert (await r.slash("call-1 --force")).startswith("Undid call-1")
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"


async def test_undo_is_recorded_and_undoing_it_redoes(rig: RigFactory, workspace: Path) -> None:
    r = rig()
    await r.bash("echo v2 > hello.txt; touch extra")
    said = await r.slash("")
    undo_id = said.split("This undo is ")[1].split(";")[0]
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
    assert "already undone" in await r.slash("call-1")
    listing = await r.slash("list")
    assert "call-1" in listing and f"undone by {undo_id}" in listing
    assert (await r.slash(undo_id)).startswith(f"Undid {undo_id}")
    assert (workspace / "hello.txt").read_text() == "v2\n" and (workspace / "extra").exists()
    audit = [line for line in r.data_dir.joinpath("audit.jsonl").read_text().splitlines()
             if '"name":"undo"' in line.replace(" ", "")]
    assert len(audit) == 3  # two undos and one refusal


async def test_failed_and_timed_out_commands_are_still_recorded(
    rig: RigFactory, workspace: Path
) -> None:
    r = rig()
    result = await r.bash("echo partial > half.txt; exit 3")
    assert result.failed and "[files: 1 created (half.txt)" in result.text
    assert (await r.slash("")).startswith("Undid call-1")
    assert not (workspace / "half.txt").exists()


async def test_read_only_mode_refuses_undo_and_read_tools_take_no_checkpoint(
    rig: RigFactory, data_dir: Path
) -> None:
    r = rig()
    await r.call("read", {"path": "hello.txt"})
    assert not (data_dir / "checkpoints").exists()
    await r.bash("touch x")
    r.env.mode = "read-only"
    assert "read-only" in await r.slash("")


async def test_file_tools_through_an_inner_symlink_and_new_parents_are_seen(
    rig: RigFactory, workspace: Path
) -> None:
    os.symlink("src", workspace / "alias")
    start = tree(workspace)
    r = rig()
    await r.call("write", {"path": "alias/through.txt", "content": "via the link\n"})
    assert (workspace / "src" / "through.txt").exists()
    assert list(r.observer.diffs("call-1")) == [str(workspace / "src" / "through.txt")]
    assert "Files: 1 created" in r.observer.text("call-1")  # seen by the (full) checkpoint
    await r.call("create_directory", {"path": "a/b/c"})
    await r.call("copy_path", {"source": "src", "destination": "a/b/c/copy"})
    assert (workspace / "a/b/c/copy/main.py").exists()
    for expected in ("call-3", "call-2", "call-1"):
        assert (await r.slash("")).startswith(f"Undid {expected}")
    assert tree(workspace) == start


async def test_names_that_are_not_utf8_or_have_newlines_are_checkpointed_and_undone(
    rig: RigFactory, workspace: Path
) -> None:
    odd = workspace / os.fsdecode(b"caf\xe9\nname.txt")
    odd.write_bytes(b"latin-1 named\n")
    start = tree(workspace)
    r = rig()
    result = await r.bash("rm -f caf*")
    assert not odd.exists()
    assert "1 deleted (caf\ufffd\nname.txt)" in result.text
    assert (await r.slash("")).startswith("Undid call-1")
    assert tree(workspace) == start


async def test_a_store_that_cannot_be_opened_never_stops_the_call(
    rig: RigFactory, workspace: Path, data_dir: Path
) -> None:
    (data_dir / "checkpoints").write_text("a file where the store's directory goes")
    r = rig()
    result = await r.bash("echo ran > ran.txt")
    assert result.error is None and (workspace / "ran.txt").read_text() == "ran\n"
    assert "No checkpoint was taken" in r.observer.text("call-1")
    assert "cannot be undone" in r.observer.text("call-1")
    assert "[files:" not in result.text


async def test_tools_whose_state_lives_in_the_data_dir_take_no_checkpoint(
    rig: RigFactory, data_dir: Path
) -> None:
    # memory_save changes state, but not in the workspace: scanning it would cost a
    # checkpoint per note for nothing.
    r = rig()
    result = await r.call("memory_save", {"content": "tests run with ./scripts/test"})
    assert result.error is None, result.text
    assert not (data_dir / "checkpoints").exists()
    await r.bash("touch x")
    assert (data_dir / "checkpoints").exists()
