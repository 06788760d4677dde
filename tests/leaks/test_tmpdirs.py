"""A killed daemon's scratch directories do not stay in /tmp for good.

Real processes: each "daemon" is a Python subprocess that makes its run directory (and a
workspace's private /tmp in it) with TMPDIR pointing at this test's directory, then is killed
with SIGKILL (no exit handler runs) or left alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from acpd.daemon import tmpdirs

DAEMON = """
import sys
from acpd.daemon import confine, tmpdirs
print(tmpdirs.run_dir(), confine.workspace_tmp((sys.argv[1],)), flush=True)
sys.stdin.read()
"""


def start(tmp: Path, workspace: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    proc = subprocess.Popen([sys.executable, "-c", DAEMON, str(workspace)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.stdout is not None
    run, private = proc.stdout.readline().split()
    assert Path(private).parent == Path(run) and Path(private).is_dir()
    return proc, Path(run), Path(private)


def test_a_killed_daemons_run_directory_is_swept_and_a_live_ones_kept(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    alive, live_run, _ = start(scratch, tmp_path / "ws")  # first: it sweeps as it starts
    killed, dead_run, dead_private = start(scratch, tmp_path / "ws")
    (dead_private / "build-state").write_text("x")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    try:
        assert dead_run.is_dir()  # nothing removed it: no exit handler ran
        assert tmpdirs.sweep(parent=str(scratch)) == [str(dead_run)]
        assert not dead_run.exists() and live_run.is_dir()
    finally:
        assert alive.stdin is not None
        alive.stdin.close()
        alive.wait()
    assert not live_run.exists()  # a daemon that exits removes its own


def test_the_sweep_leaves_what_is_not_an_abandoned_run_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / tmpdirs.LOCK).write_text("")
    (outside / "keep").write_text("precious")
    (tmp_path / "acpd-run-link").symlink_to(outside)  # a planted link: never followed
    (tmp_path / "acpd-run-nolock").mkdir()  # being made, or not ours: no lock to take
    (tmp_path / "acpd-run-file").write_text("")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / tmpdirs.LOCK).write_text("")
    assert tmpdirs.sweep(parent=str(tmp_path)) == []
    assert (outside / "keep").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "acpd-run-file", "acpd-run-link", "acpd-run-nolock", "other", "outside"]


def test_a_new_daemon_sweeps_on_its_first_scratch_directory(tmp_path: Path) -> None:
    killed, dead_run, _ = start(tmp_path, tmp_path / "ws")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    alive, live_run, _ = start(tmp_path, tmp_path / "ws")
    try:
        deadline = time.monotonic() + 30
        while dead_run.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not dead_run.exists() and live_run.is_dir()
    finally:
        assert alive.stdin is not None
        alive.stdin.close()
        alive.wait()


def test_one_descriptor_per_daemon_whatever_the_number_of_workspaces(tmp_path: Path) -> None:
    from acpd.daemon import confine

    confine.workspace_tmp((str(tmp_path / "first"),))
    for thread in threading.enumerate():  # the first run directory's sweep opens files
        if thread.name == "acpd-tmp-sweep":
            thread.join(30)
    before = len(os.listdir("/proc/self/fd"))
    made = {confine.workspace_tmp((str(tmp_path / f"ws{n}"),)) for n in range(20)}
    assert len(made) == 20 and None not in made
    assert len(os.listdir("/proc/self/fd")) == before
    assert {Path(str(p)).parent for p in made} == {Path(tmpdirs.run_dir())}


def test_a_tree_deeper_than_python_recurses_is_still_swept(tmp_path: Path) -> None:
    """A sandboxed command can build it in its private /tmp; Python 3.11's rmtree raised
    RecursionError there, after removing the `.lock`: the directory stayed for good and
    the sweep stopped at it."""
    killed, dead_run, dead_private = start(tmp_path, tmp_path / "ws")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    fd = os.open(dead_private, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1200):  # relative steps: the whole path is past what one call may name
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    (tmp_path / "acpd-run-zz").mkdir()  # sorted after it: the sweep must go on
    (tmp_path / "acpd-run-zz" / tmpdirs.LOCK).write_text("")
    assert sorted(tmpdirs.sweep(parent=str(tmp_path))) == sorted(
        [str(dead_run), str(tmp_path / "acpd-run-zz")])
    assert not dead_run.exists()


def test_the_private_tmp_of_a_workspace_no_session_uses_is_removed(tmp_path: Path) -> None:
    from acpd.daemon import confine

    used, idle = (str(tmp_path / "used"),), (str(tmp_path / "idle"),)
    kept, gone = confine.workspace_tmp(used), confine.workspace_tmp(idle)
    assert kept and gone
    (Path(gone) / "build-state").write_text("x")
    released = confine.release_tmp([str(tmp_path / "used" / "src")])
    assert gone in released and kept not in released  # (earlier tests' idle ones go too)
    assert Path(kept).is_dir() and not Path(gone).exists()
    again = confine.workspace_tmp(idle)  # a session there again: a fresh one
    assert again and again != gone and Path(again).is_dir()
    assert {kept, again} <= set(confine.release_tmp([]))
    assert not Path(kept).exists() and not Path(again).exists()
