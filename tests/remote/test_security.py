"""The shared daemon's socket is private: a runtime directory or a socket that another user
could reach or replace is refused (before anything is sent), a peer of another uid is
refused by SO_PEERCRED, and a stale socket (its daemon died) is replaced by a new daemon."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from acpd.remote.paths import UnsafePath, check_peer
from tests.e2e.harness import caps, write_script
from tests.remote.harness import Place, raw_forwarder, socket_path, window

pytestmark = pytest.mark.anyio

ROOT_ONLY = pytest.mark.skipif(os.getuid() != 0, reason="chown to another uid needs root")
OTHER_UID = 65534
SYSTEM_PYTHON = "/usr/bin/python3"


def refused(shared: Place, *words: str) -> None:
    result = raw_forwarder(shared)
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert "refusing the shared daemon" in stderr
    for word in words:
        assert word in stderr, stderr
    assert result.stdout == b"", "nothing answered through an unsafe place"
    assert shared.daemon_pids() == [], "no daemon started there"


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701, 0o777])
def test_a_runtime_directory_others_can_reach_is_refused(mode: int, shared: Place) -> None:
    shared.socket_dir.mkdir(mode=0o700)
    os.chmod(shared.socket_dir, mode)
    refused(shared, f"{mode:04o}", str(shared.socket_dir))


def test_a_runtime_directory_that_is_a_symlink_is_refused(shared: Place) -> None:
    elsewhere = shared.root / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    shared.socket_dir.symlink_to(elsewhere)
    refused(shared, "not a directory")
    assert list(elsewhere.iterdir()) == []


@ROOT_ONLY
def test_a_runtime_directory_of_another_user_is_refused(shared: Place) -> None:
    shared.socket_dir.mkdir(mode=0o700)
    os.chown(shared.socket_dir, OTHER_UID, OTHER_UID)
    refused(shared, f"uid {OTHER_UID}")


def _listening_socket(path: Path) -> socket.socket:
    path.parent.mkdir(mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    listener.setblocking(False)
    return listener


@pytest.mark.parametrize("mode", [0o666, 0o660, 0o606])
def test_a_socket_others_can_reach_is_refused(mode: int, shared: Place) -> None:
    """A listener at the daemon's address, reachable by others: never connected to."""
    path = socket_path(shared)
    listener = _listening_socket(path)
    os.chmod(path, mode)
    try:
        refused(shared, f"{mode:04o}")
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


@ROOT_ONLY
def test_a_socket_of_another_user_is_refused(shared: Place) -> None:
    path = socket_path(shared)
    listener = _listening_socket(path)
    os.chmod(path, 0o600)
    os.chown(path, OTHER_UID, OTHER_UID)
    try:
        refused(shared, f"uid {OTHER_UID}")
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


def test_a_file_in_place_of_the_socket_is_refused(shared: Place) -> None:
    path = socket_path(shared)
    path.parent.mkdir(mode=0o700)
    path.write_text("not a socket")
    os.chmod(path, 0o600)
    refused(shared, "not a socket")


@ROOT_ONLY
@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason=f"needs {SYSTEM_PYTHON}")
def test_a_peer_of_another_uid_is_refused() -> None:
    """The check both ends make after connecting (the daemon on accept, the forwarder on
    connect): a process of another uid at the other end is refused, ours is accepted."""
    place = Path(tempfile.mkdtemp(prefix="acpd-peer-"))  # /tmp: the other uid can reach it
    place.chmod(0o755)
    path = place / "s.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o777)
    listener.listen(2)
    listener.settimeout(20)
    code = ("import socket, sys, time; s = socket.socket(socket.AF_UNIX); "
            "s.connect(sys.argv[1]); time.sleep(2)")
    for user, ok in ((OTHER_UID, False), (None, True)):
        # The system's python: the other uid may not be allowed into this checkout's venv.
        python = SYSTEM_PYTHON if user is not None else sys.executable
        child = subprocess.Popen([python, "-c", code, str(path)], user=user)
        try:
            conn, _ = listener.accept()
            if ok:
                assert check_peer(conn) == child.pid
            else:
                with pytest.raises(UnsafePath, match=f"uid {OTHER_UID}"):
                    check_peer(conn)
            conn.close()
        finally:
            child.kill()
            child.wait()
    listener.close()
    shutil.rmtree(place)


async def test_a_stale_socket_is_replaced_by_a_new_daemon(shared: Place) -> None:
    """A socket whose daemon is gone (nobody listens): the next window starts a daemon."""
    shared.script = write_script(shared.root / "s.json", [{"text": "fresh daemon"}])
    path = socket_path(shared)
    stale = _listening_socket(path)
    os.chmod(path, 0o600)
    stale.close()  # the file stays; connecting to it is refused
    assert path.exists()
    async with window(shared) as one:
        await one.run.initialize(caps())
        session_id = await one.run.new_session()
        assert await one.run.prompt(session_id, "hi") == "end_turn"
        assert "fresh daemon" in one.run.client.texts()
        assert len(shared.daemon_pids()) == 1
