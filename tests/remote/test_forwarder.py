"""The forwarder passes everything through unchanged and answers for what it cannot do:
a first message that is not `initialize` goes to the daemon (which answers it as `acpd
serve` would), messages far larger than its buffers pass whole both ways, an editor that
leaves before saying anything starts nothing, a daemon that cannot start is reported with
its own words, and a bad config is told at the first session call (and read again once
fixed), never by a dead daemon."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.e2e.harness import write_script
from tests.e2e.schema import REPO
from tests.remote.harness import Place


class Editor:
    """A raw line-level editor over a forwarder's stdio."""

    def __init__(self, shared: Place) -> None:
        self.proc = subprocess.Popen(shared.serve_argv(), env=shared.env(), cwd=REPO,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.ids = 0

    def send_line(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self.ids += 1
        self.send_line(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method,
                                   "params": params}).encode())
        return self.answer(self.ids)

    def answer(self, msg_id: Any) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if message.get("id") == msg_id and "method" not in message:
                return dict(message)
        raise EOFError(self.proc.stderr.read().decode() if self.proc.stderr else "")

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(30)
        return code, self.proc.stderr.read().decode()


INIT = {"protocolVersion": 1, "clientCapabilities": {}}


def test_a_first_message_that_is_not_initialize_is_answered_by_the_daemon(
    shared: Place,
) -> None:
    editor = Editor(shared)
    editor.send_line(b"this is not json")
    assert editor.answer(None)["error"]["code"] == -32700
    early = editor.request("session/new", {"cwd": str(shared.workspace), "mcpServers": []})
    assert early["error"]["code"] == -32600 and "initialize" in early["error"]["message"]
    assert editor.request("initialize", INIT)["result"]["protocolVersion"] == 1
    assert editor.close() == (0, "")


def test_messages_larger_than_the_buffers_pass_whole_both_ways(shared: Place) -> None:
    shared.script = write_script(shared.root / "s.json", [{"text": "got it"}])
    big = "x" * (3 << 20)  # 3 MiB: three times a direction's buffer
    editor = Editor(shared)
    assert "result" in editor.request("initialize", INIT)
    session = editor.request("session/new", {"cwd": str(shared.workspace), "mcpServers": []})
    session_id = session["result"]["sessionId"]
    prompt = [{"type": "text", "text": big}]
    done = editor.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
    assert "stopReason" in done["result"]  # max_tokens: the model budget, not the pipe
    assert editor.close()[0] == 0

    again = Editor(shared)
    assert "result" in again.request("initialize", INIT)
    again.ids += 1
    again.send_line(json.dumps({"jsonrpc": "2.0", "id": again.ids, "method": "session/load",
                                "params": {"sessionId": session_id, "mcpServers": [],
                                           "cwd": str(shared.workspace)}}).encode())
    assert again.proc.stdout is not None
    replayed = ""
    for line in again.proc.stdout:
        message = json.loads(line)
        update = (message.get("params") or {}).get("update") or {}
        if update.get("sessionUpdate") == "user_message_chunk":
            replayed += update["content"]["text"]
        if message.get("id") == again.ids:
            break
    assert replayed == big
    assert again.close()[0] == 0


def test_an_editor_that_leaves_at_once_starts_nothing(shared: Place) -> None:
    result = subprocess.run(shared.serve_argv(), input=b"", env=shared.env(), cwd=REPO,
                            capture_output=True, timeout=60)
    assert result.returncode == 0 and result.stdout == b""
    assert shared.daemon_pids() == []


def test_a_daemon_that_cannot_start_is_reported(shared: Place) -> None:
    """A runtime directory so deep that no Unix socket fits in it (107 bytes)."""
    deep = shared.root / "run" / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    code, said = _run_with_runtime(shared, deep)
    assert code == 1, said
    assert "could not start" in said and "cannot listen on" in said
    assert "Traceback" not in said


def _run_with_runtime(shared: Place, runtime: Path) -> tuple[int, str]:
    env = {**shared.env(), "XDG_RUNTIME_DIR": str(runtime)}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": INIT}).encode() + b"\n"
    result = subprocess.run(shared.serve_argv(), input=line, env=env, cwd=REPO,
                            capture_output=True, timeout=60)
    return result.returncode, result.stderr.decode()


def test_a_bad_config_is_told_at_the_first_session_call_and_read_again_once_fixed(
    shared: Place,
) -> None:
    shared.config = shared.root / "acpd.toml"
    shared.config.write_text("[agent\nmodel = \n")
    editor = Editor(shared)
    assert "result" in editor.request("initialize", INIT)
    refused = editor.request("session/new", {"cwd": str(shared.workspace), "mcpServers": []})
    assert str(shared.config) in refused["error"]["message"]
    shared.config.write_text('[agent]\ndefault_mode = "ask"\n')
    fixed = editor.request("session/new", {"cwd": str(shared.workspace), "mcpServers": []})
    assert fixed["result"]["modes"]["currentModeId"] == "ask"
    assert editor.close()[0] == 0
    assert len(shared.daemon_pids()) == 1, "the daemon outlived the bad config"


HEAVY = ("asyncio", "anyio", "pydantic", "sqlite3", "_ssl", "hashlib", "acpd.daemon.agent",
         "acpd.daemon.config", "acpd.sandbox.launch")


def test_the_forwarder_loads_nothing_heavy(shared: Place) -> None:
    """What the forwarder imports on its way to the editor (python -X importtime): no event
    loop, no pydantic, no store, no OpenSSL, none of the other subcommands."""
    shared.script = write_script(shared.root / "s.json", [{"text": "hi"}])
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": INIT}).encode() + b"\n"
    argv = shared.serve_argv()
    result = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], input=line,
                            env=shared.env(), cwd=REPO, capture_output=True, timeout=60)
    assert result.returncode == 0
    assert b'"protocolVersion":1' in result.stdout
    loaded = {row.rsplit("|", 1)[-1].strip() for row in result.stderr.decode().splitlines()
              if row.startswith("import time:")}
    assert "acpd.remote.forward" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    # With the daemon running, the daemon answers initialize: the window imports none of
    # the handshake (what keeps a new window within its start-up budget).
    again = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], input=line,
                           env=shared.env(), cwd=REPO, capture_output=True, timeout=60)
    assert again.returncode == 0 and b'"protocolVersion":1' in again.stdout
    loaded = {row.rsplit("|", 1)[-1].strip() for row in again.stderr.decode().splitlines()
              if row.startswith("import time:")}
    assert "acpd.remote.forward" in loaded
    lean = {"acpd.daemon.handshake", "acpd.protocol.jsonrpc", "dataclasses", "typing"}
    assert not loaded & lean, sorted(loaded & lean)


def test_the_config_key_makes_serve_forward_and_the_flag_overrides_it(shared: Place) -> None:
    shared.config = shared.root / "acpd.toml"
    shared.config.write_text('[serve]\nremote = "auto"\n')
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": INIT}).encode() + b"\n"
    plain = [a for a in shared.serve_argv() if a != "--remote=auto"]
    for argv, forwards in (([*plain, "--remote=off"], False), (plain, True)):
        result = subprocess.run(argv, input=line, env=shared.env(), cwd=REPO,
                                capture_output=True, timeout=60)
        assert result.returncode == 0 and b'"protocolVersion":1' in result.stdout
        assert bool(shared.daemon_pids()) is forwards
