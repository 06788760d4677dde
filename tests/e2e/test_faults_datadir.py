"""An unusable data directory and an unwritable audit log (issue 9, item 3).

Root-proof ways to make the directory unusable (the tests run as root, so chmod proves
nothing): a regular file, a path under a regular file, and a read-only bind mount made in a
user+mount namespace (`unshare -rm`). acpd must say which directory and why (stderr once, the
user once, `acpd doctor`), keep sessions in memory, and refuse tool calls it cannot audit. A
directory that turns read-only under a running daemon must not kill it. An audit log whose
writes fail (a symlink to /dev/full: ENOSPC on every write) fails the call, clearly, with its
card closed, and the prompt still ends normally.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.daemon import RawPeer, raw_daemon

UNSHARE = shutil.which("unshare")
NSENTER = shutil.which("nsenter")


def can_unshare() -> bool:
    if UNSHARE is None:
        return False
    probe = subprocess.run([UNSHARE, "-rm", "true"], capture_output=True)
    return probe.returncode == 0


needs_namespaces = pytest.mark.skipif(not can_unshare(), reason="no user+mount namespaces")


def prompt(peer: RawPeer, session_id: str, text: str) -> tuple[dict[str, Any], list[dict]]:
    """A prompt's answer and the updates that came before it."""
    peer.send({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": {
        "sessionId": session_id, "prompt": [{"type": "text", "text": text}]}})
    updates = []
    while True:
        message = peer.recv()
        assert message is not None, "the daemon ended"
        if message.get("id") == "p" and "method" not in message:
            return message, updates
        if message.get("method") == "session/update":
            updates.append(message["params"]["update"])


def said(updates: list[dict]) -> str:
    return "".join(u["content"]["text"] for u in updates
                   if u["sessionUpdate"] == "agent_message_chunk")


def finals(updates: list[dict]) -> list[dict]:
    return [u for u in updates if u.get("status") in ("completed", "failed")]


def new_session(peer: RawPeer, cwd: Path) -> str:
    peer.initialize()
    reply = peer.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    assert "result" in reply, reply
    session_id = str(reply["result"]["sessionId"])
    peer.request("session/set_mode", {"sessionId": session_id, "modeId": "auto"})
    return session_id


def stderr_of(peer: RawPeer) -> str:
    assert peer.proc.stderr is not None
    return peer.proc.stderr.read().decode(errors="replace")


def check_in_memory(peer: RawPeer, workspace: Path, directory: Path, cause: str) -> None:
    """Sessions run, the user is told once (directory and cause), tool calls are refused
    before anything runs, and the daemon says the same on stderr."""
    session_id = new_session(peer, workspace)
    answer, updates = prompt(peer, session_id, "/bash touch ran.txt")
    assert answer["result"] == {"stopReason": "end_turn"}, answer
    text = said(updates)
    assert f"cannot use the data directory {directory}" in text and cause in text, text
    assert "memory only" in text
    (final,) = finals(updates)
    assert final["status"] == "failed"
    assert "cannot open the audit log" in str(final["content"]), final
    assert not (workspace / "ran.txt").exists(), "a call that cannot be audited ran"
    listed = peer.request("session/list", {})
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session_id]
    _, again = prompt(peer, session_id, "/status")
    assert "data directory" not in said(again), "said more than once"
    assert peer.close() == 0
    log = stderr_of(peer)
    assert f"cannot use the data directory {directory}" in log and "Traceback" not in log


@pytest.mark.parametrize("where", ["a-file", "under-a-file"])
def test_a_data_dir_that_is_a_file_runs_in_memory_and_says_why(
    where: str, tmp_path: Path, workspace: Path
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory\n")
    directory = blocker if where == "a-file" else blocker / "acpd"
    with raw_daemon(directory) as peer:
        check_in_memory(peer, workspace, directory, f"{blocker} is not a directory")
    doctor = subprocess.run(
        [sys.executable, "-m", "acpd", "doctor", "--data-dir", str(directory)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "ACPD_CONFIG": str(tmp_path / "none.toml")},
    )
    line = next(x for x in doctor.stdout.splitlines() if "data dir" in x)
    assert "FAIL" in line and f"{blocker} is not a directory" in line, doctor.stdout


@contextmanager
def namespaced_daemon(data_dir: Path, setup: str) -> Iterator[RawPeer]:
    """`acpd serve` in its own user+mount namespace, after the shell commands `setup`."""
    serve = " ".join([sys.executable, "-m", "acpd", "serve", "--data-dir", str(data_dir)])
    assert UNSHARE is not None
    proc = subprocess.Popen(
        [UNSHARE, "-rm", "sh", "-c", f"{setup} && exec {serve}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    peer = RawPeer(proc)
    try:
        yield peer
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@needs_namespaces
def test_a_read_only_data_dir_runs_in_memory_and_says_why(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    (data_dir / "keep").write_text("a directory that exists but cannot be written\n")
    with namespaced_daemon(data_dir, f"mount --bind -o ro {data_dir} {data_dir}") as peer:
        check_in_memory(peer, workspace, data_dir, "read-only file system")


@needs_namespaces
@pytest.mark.skipif(NSENTER is None, reason="no nsenter")
def test_a_data_dir_turning_read_only_mid_session_does_not_kill_the_daemon(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """A remount of the mount the daemon writes through is refused while it holds files
    open for writing (EBUSY), so the directory is made read-only the way a user can: a
    read-only bind mount over it. What the daemon holds open stays writable; anything it
    opens anew meets the read-only mount."""
    with namespaced_daemon(data_dir, f"mount --bind {data_dir} {data_dir}") as peer:
        session_id = new_session(peer, workspace)
        answer, _ = prompt(peer, session_id, "/bash echo before")
        assert answer["result"] == {"stopReason": "end_turn"}
        assert NSENTER is not None
        made = subprocess.run(
            [NSENTER, "-t", str(peer.proc.pid), "-U", "-m", "--preserve-credentials",
             "mount", "--bind", "-o", "ro", str(data_dir), str(data_dir)],
            capture_output=True, text=True,
        )
        assert made.returncode == 0, made.stderr
        probe = subprocess.run(
            [NSENTER, "-t", str(peer.proc.pid), "-U", "-m", "--preserve-credentials",
             "touch", str(data_dir / "probe")], capture_output=True, text=True,
        )
        assert "Read-only file system" in probe.stderr, "the directory did not turn read-only"
        for text in ("/bash echo after", "/status", "/bash echo again"):
            answer, _ = prompt(peer, session_id, text)
            assert answer["result"] == {"stopReason": "end_turn"}, answer
        second = peer.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert "result" in second, second
        assert peer.close() == 0
        assert "Traceback" not in stderr_of(peer)


def test_an_audit_log_that_cannot_be_written_fails_the_call_and_closes_its_card(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    (data_dir / "audit.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    with raw_daemon(data_dir) as peer:
        session_id = new_session(peer, workspace)
        answer, updates = prompt(peer, session_id, "/bash echo ran > ran.txt")
        assert answer["result"] == {"stopReason": "end_turn"}, answer
        (final,) = finals(updates)
        assert final["status"] == "failed"
        shown = str(final["content"])
        assert f"cannot write the audit log {data_dir / 'audit.jsonl'}" in shown, shown
        assert "No space left on device" in shown
        assert "cannot write the audit log" in said(updates)
        # The daemon goes on: the next call is tried (and fails the same way), not wedged.
        answer, updates = prompt(peer, session_id, "/list_directory .")
        assert answer["result"] == {"stopReason": "end_turn"}
        assert [f["status"] for f in finals(updates)] == ["failed"]
        assert peer.close() == 0
        assert "Traceback" not in stderr_of(peer)


@needs_namespaces
def test_a_data_dir_that_fills_up_mid_session_is_said_once_and_the_session_goes_on(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """The data dir is a small tmpfs in the daemon's namespace; the test fills it (through
    /proc/PID/root) between two prompts. Every store write then fails (SQLITE_FULL): the
    prompts, a new session and the stop must still work, and the user hears it once."""
    setup = f"mount -t tmpfs -o size=400k tmpfs {data_dir}"
    with namespaced_daemon(data_dir, setup) as peer:
        session_id = new_session(peer, workspace)
        answer, _ = prompt(peer, session_id, "/status")
        assert answer["result"] == {"stopReason": "end_turn"}
        inside = Path(f"/proc/{peer.proc.pid}/root{data_dir}")
        assert (inside / "sessions.sqlite3").exists()
        with pytest.raises(OSError), (inside / "filler").open("wb") as filler:
            for _ in range(1000):
                filler.write(b"x" * 65536)
                filler.flush()
        told = []
        for text in ("/status", "hello", "/status"):
            answer, updates = prompt(peer, session_id, text)
            assert answer["result"] == {"stopReason": "end_turn"}, answer
            told.append(said(updates).count("not being saved"))
        assert told == [1, 0, 0], told
        second = peer.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert "result" in second, second
        assert peer.close() == 0
        log = stderr_of(peer)
        assert "database or disk is full" in log and "Traceback" not in log, log[-3000:]
