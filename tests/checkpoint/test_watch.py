"""The file watcher (inotify) behind incremental checkpoints: whatever happens on disk, a
watched checkpoint must equal a full scan of the same tree, and every doubt must end in a
full scan. Real files, real inotify, real bash in the real sandbox."""

from __future__ import annotations

import mmap
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.checkpoint.conftest import RigFactory, tree

from acpd.checkpoint import Limits, WorkspaceStore
from acpd.checkpoint.entries import diff_manifests
from acpd.sandbox.inotify import MAX_DIRTY
from acpd.sandbox.status import sandbox_status

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


def states(store: WorkspaceStore) -> dict[str, Any]:
    return {p: e.state() for p, e in store.manifest.items()}


def truth(workspace: Path, tmp: Path) -> dict[str, Any]:
    """What a fresh full scan (no watcher, its own store) finds now."""
    data = tmp / f"truth-{random.random()}"
    store = WorkspaceStore(data, str(workspace), Limits(watch=False))
    try:
        store.checkpoint()
        return states(store)
    finally:
        store.close()
        shutil.rmtree(data)


def watched(workspace: Path, tmp: Path) -> WorkspaceStore:
    store = WorkspaceStore(tmp / "data", str(workspace), Limits())
    store.checkpoint(trust_watch=True)
    assert store.tracker.kind == "full" and store.tracker.off is None
    return store


def mutate(rnd: random.Random, ws: Path) -> None:
    """One random change of any kind: in-place edits that keep the size, creates, deletes,
    chmod, links, new trees, files replaced by directories and back."""
    files = [p for p in ws.rglob("*") if p.is_file() and not p.is_symlink()]
    dirs = [ws, *(p for p in ws.rglob("*") if p.is_dir() and not p.is_symlink())]
    op = rnd.randrange(10)
    if op == 0 and files:  # same size, same second: only the content differs
        path = rnd.choice(files)
        data = bytearray(path.read_bytes() or b"x")
        data[0] = (data[0] + 1) % 256
        with open(path, "r+b") as f:
            f.write(bytes(data))
    elif op == 1:
        (rnd.choice(dirs) / f"n{rnd.randrange(10**6)}.txt").write_text(str(rnd.random()))
    elif op == 2 and files:
        rnd.choice(files).unlink()
    elif op == 3 and files:
        path = rnd.choice(files)
        path.chmod(0o600 if path.stat().st_mode & 0o044 else 0o644)
    elif op == 4:
        base = rnd.choice(dirs) / f"t{rnd.randrange(10**6)}"
        (base / "a" / "b").mkdir(parents=True)
        (base / "a" / "b" / "deep.txt").write_text("deep")
        (base / "top.txt").write_text("top")
    elif op == 5 and len(dirs) > 1:
        shutil.rmtree(rnd.choice(dirs[1:]))
    elif op == 6 and files:
        os.symlink(rnd.choice(files).name, rnd.choice(dirs) / f"l{rnd.randrange(10**6)}")
    elif op == 7 and files:
        path = rnd.choice(files)
        path.unlink()
        path.mkdir()
        (path / "inside.txt").write_text("was a file")
    elif op == 8 and files:
        path = rnd.choice(files)
        path.with_name(path.name + ".moved").write_bytes(path.read_bytes())
        os.replace(path.with_name(path.name + ".moved"), path)  # an editor's atomic save
    elif files:
        with open(rnd.choice(files), "a") as f:
            f.write("appended\n")


def test_watched_checkpoints_equal_a_full_scan_after_random_changes(
    workspace: Path, tmp_path: Path
) -> None:
    rnd = random.Random(1515)
    store = watched(workspace, tmp_path)
    kinds = []
    for step in range(60):
        for _ in range(rnd.randint(1, 4)):
            mutate(rnd, workspace)
        store.checkpoint(trust_watch=True)
        kinds.append(store.tracker.kind)
        assert states(store) == truth(workspace, tmp_path), step
    assert kinds.count("incremental") > 40  # the point of it: most were not full scans
    assert store.tracker.off is None
    store.close()


def test_a_full_scan_names_every_path_it_found_changed_and_few_others(
    workspace: Path, tmp_path: Path
) -> None:
    """What later steps compare after a full scan (the call's diff, the manifest's rows,
    the watcher's check) is only what the scan says it touched: it must hold every
    difference, and an incomplete scan must say "any path"."""
    rnd = random.Random(2626)
    store = WorkspaceStore(tmp_path / "data", str(workspace), Limits(watch=False))
    store.checkpoint()
    for step in range(40):
        for _ in range(rnd.randint(1, 4)):
            mutate(rnd, workspace)
        before = dict(store.manifest)
        generation = store.generation
        result = store.checkpoint()
        assert store.tracker.kind == "full"
        assert result.touched is not None, step
        differing = {c.path for c in diff_manifests(before, result.entries)}
        assert differing <= result.touched, (step, differing - result.touched)
        assert store.touched_since(generation) == result.touched
        # Beyond the differences, only files read again (their last read was racy or
        # incomplete): an unchanged entry is never rewritten.
        reread = {p for p, e in before.items() if e.kind == "f" and not e.fast}
        assert result.touched - differing <= reread, step
        assert states(store) == truth(workspace, tmp_path), step
    store.close()
    small = WorkspaceStore(tmp_path / "small", str(workspace), Limits(watch=False,
                                                                      max_entries=3))
    cut = small.checkpoint()
    assert not cut.complete and cut.touched is None
    assert small.touched_since(small.generation - 1) is None
    small.close()


def test_every_doubt_ends_in_a_full_scan(workspace: Path, tmp_path: Path) -> None:
    store = watched(workspace, tmp_path)
    (workspace / "src" / "x.txt").write_text("x")
    store.checkpoint(trust_watch=True)
    assert store.tracker.kind == "incremental"
    os.rename(workspace / "src", workspace / "src2")  # every watch below has a stale path
    store.checkpoint(trust_watch=True)
    assert store.tracker.kind == "full"
    (workspace / "src2" / "y.txt").write_text("y")  # the rebuilt watches know its new name
    store.checkpoint(trust_watch=True)
    assert store.tracker.kind == "incremental"
    assert states(store) == truth(workspace, tmp_path)
    many = workspace / "many"
    many.mkdir()
    store.checkpoint(trust_watch=True)
    for n in range(MAX_DIRTY + 10):
        (many / f"f{n}").write_text("")
    store.checkpoint(trust_watch=True)
    assert store.tracker.kind == "full"  # a storm: scanning everything is as cheap
    (workspace / "z.txt").write_text("z")
    store.checkpoint(trust_watch=False)  # after a call outside the sandbox
    assert store.tracker.kind == "full"
    assert states(store) == truth(workspace, tmp_path)
    store.close()


def test_files_with_other_links_are_restated_and_a_new_link_means_a_full_scan(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.link(workspace / "hello.txt", outside / "alias")  # linked before the watcher
    store = watched(workspace, tmp_path)
    with open(outside / "alias", "a") as f:
        f.write("written through the other name: no event in the workspace\n")
    store.checkpoint(trust_watch=True)
    assert store.tracker.kind == "incremental"
    assert states(store) == truth(workspace, tmp_path)  # hello.txt was re-stat'ed anyway
    os.link(workspace / "src" / "main.py", workspace / "main-link.py")
    store.checkpoint(trust_watch=True)
    assert store.tracker.kind == "full"
    assert states(store) == truth(workspace, tmp_path)
    store.close()


def test_a_change_no_event_reported_switches_the_watcher_off_at_the_next_full_scan(
    workspace: Path, tmp_path: Path
) -> None:
    store = watched(workspace, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    # Outside any sandbox: a link made elsewhere (no event here), then a write through it,
    # and a store through a shared map after its descriptor was closed.
    os.link(workspace / "src" / "main.py", outside / "alias")
    with open(outside / "alias", "a") as f:
        f.write("unseen\n")
    with open(workspace / "hello.txt", "r+b") as f:
        mapped = mmap.mmap(f.fileno(), 0)
    mapped[0:1] = b"#"
    mapped.flush()
    mapped.close()
    store.checkpoint(trust_watch=False)  # full: it finds what no event named
    assert store.tracker.kind == "full"
    assert store.tracker.off is not None and "missed" in store.tracker.off
    assert states(store) == truth(workspace, tmp_path)
    (workspace / "later.txt").write_text("later")
    store.checkpoint(trust_watch=True)
    assert store.tracker.kind == "full"  # from now on, every time
    store.close()


def test_a_mount_point_in_the_workspace_is_never_trusted_to_the_watcher(
    workspace: Path, tmp_path: Path
) -> None:
    status = sandbox_status()
    if not status.available or status.binary is None:
        pytest.skip(status.reason)
    # A tmpfs under the workspace, as the daemon would see one, needs a mount namespace:
    # run the checkpoint in bubblewrap with its own tmpfs at ws/mnt.
    (workspace / "mnt").mkdir()
    script = (
        "import sys; sys.path[:0] = sys.argv[3:];"
        "from pathlib import Path;"
        "from acpd.checkpoint import Limits, WorkspaceStore;"
        "s = WorkspaceStore(Path(sys.argv[2]), sys.argv[1], Limits());"
        "s.checkpoint(trust_watch=True); print(s.tracker.off)"
    )
    argv = [status.binary, "--unshare-user", "--dev-bind", "/", "/", "--tmpfs",
            str(workspace / "mnt"), "--", sys.executable, "-c", script, str(workspace),
            str(tmp_path / "data"), *sys.path]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert "another file system" in out


@pytest.mark.anyio
async def test_a_sandboxed_command_is_checkpointed_from_events_and_undone_exactly(
    rig: RigFactory, workspace: Path, tmp_path: Path
) -> None:
    if not sandbox_status().available:
        pytest.skip("no sandbox here")
    (workspace / "old.txt").write_text("old\n")
    before = tree(workspace)
    r = rig()
    result = await r.bash(
        "printf 'new\\n' > src/new.py; printf x >> hello.txt; mkdir -p a/b && echo d > a/b/c;"
        " rm -f old.txt; chmod 600 src/main.py;"
        " ln src/main.py /tmp/hard 2>/dev/null && echo LINKED-OUT")
    assert "LINKED-OUT" not in result.text  # another mount: no hard link out of the root
    assert r.pipeline.checkpoints is not None
    store = r.pipeline.checkpoints.store(str(workspace))
    assert store.tracker.kind == "incremental"
    assert states(store) == truth(workspace, tmp_path)
    assert "src/new.py" in result.text and "hello.txt" in result.text and "old.txt" in result.text
    assert (await r.slash("")).startswith("Undid call-1")
    assert tree(workspace) == before


@pytest.mark.anyio
async def test_interleaved_calls_of_two_sessions_each_see_their_changes(
    workspace: Path, tmp_path: Path
) -> None:
    from acpd.checkpoint import Checkpoints

    book = Checkpoints(tmp_path / "data")
    try:
        warm = await book.begin("warm", "s0", "bash", "warm", str(workspace))
        await warm.finish([], confined=True)
        first = await book.begin("a", "s1", "bash", "a", str(workspace))
        (workspace / "a.txt").write_text("a")
        second = await book.begin("b", "s2", "bash", "b", str(workspace))
        (workspace / "b.txt").write_text("b")
        (workspace / "hello.txt").write_text("changed by a\n")
        done_a = await first.finish([], confined=True)
        (workspace / "c.txt").write_text("c")
        done_b = await second.finish([], confined=True)
    finally:
        book.close()
    assert {c.path for c in done_a.changes} == {"a.txt", "b.txt", "hello.txt"}
    assert {c.path for c in done_b.changes} == {"b.txt", "hello.txt", "c.txt"}


def test_only_the_bash_tool_s_word_that_it_ran_sandboxed_is_believed() -> None:
    import dataclasses

    from acpd.tools.builtin.shell import SPECS
    from acpd.tools.execution import _confined
    from acpd.tools.spec import ToolOutput

    (bash,) = SPECS
    plugin = dataclasses.replace(bash, id="plugin__mine", name="mine")
    claims = ToolOutput("ok", raw={"sandbox": "bwrap", "exit_code": 0})
    assert _confined(bash, claims)
    assert not _confined(plugin, claims)  # a plugin or MCP server could say anything
    assert not _confined(bash, ToolOutput("ok", raw={"sandbox": "none: switched off"}))
    assert not _confined(bash, ToolOutput("ok"))
