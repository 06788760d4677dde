"""Item 8: secrets do not leak through the cuts and seams of streaming.

Through the real daemon, with the values assembled at run time (the repository holds no
secret-shaped string):
- a private key larger than the output byte limit, so the front cut falls inside it (with
  and without its END line, locally and in the editor's terminal): none of its lines reaches
  the editor, the store (the SQLite file itself, WAL included), the audit or the log;
- a token split across two reads at every offset: no part of it is ever shown;
- a secret inside the command itself: redacted in the card title, rawInput, the permission
  prompt, the store (the SQLite file's bytes), the audit and the log.
"""

from __future__ import annotations

import base64
import os
import textwrap
from pathlib import Path

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import Run, acpd, caps, write_script
from tests.filters.test_secrets import ALNUM
from tests.guards.conftest import bash_turns

pytestmark = pytest.mark.anyio
LIMIT_CONFIG = "[tools.shell]\noutput_byte_limit = 1024\n"


def pem_key() -> tuple[str, list[str]]:
    body = textwrap.wrap(base64.b64encode(os.urandom(40 * 48)).decode(), 64)
    head, tail = "-----BEGIN " + "RSA PRIVATE KEY-----", "-----END " + "RSA PRIVATE KEY-----"
    return "\n".join([head, *body, tail]) + "\n", body


def everything(run: Run, data_dir: Path, client: RecordingClient) -> dict[str, str]:
    """Every place a value could rest or pass: the wire, what the client received, the
    store's files as bytes, the audit, the daemon's log."""
    files = sorted(data_dir.glob("sessions.sqlite3*"))
    return {
        "wire": run.log.read_text(errors="replace"),
        "client": repr(client.events),
        "sqlite file": b"".join(f.read_bytes() for f in files).decode("latin-1"),
        "audit": (data_dir / "audit.jsonl").read_text(),
        "log": run.daemon_log(),
    }


def leaks(places: dict[str, str], needles: list[str]) -> list[tuple[str, str]]:
    return [(p, n[:12]) for p, text in places.items() for n in needles if n in text]


@pytest.mark.parametrize("terminal", [False, True], ids=["local", "editor-terminal"])
@pytest.mark.parametrize("command", ["cat material.txt", "head -n 30 material.txt",
                                     "cat material.txt; cat material.txt | head -n 25"])
async def test_a_key_cut_by_the_byte_limit_never_shows(
    command: str, terminal: bool, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    key, lines = pem_key()
    (workspace / "material.txt").write_text(key)
    config = tmp_path / "config.toml"
    config.write_text(LIMIT_CONFIG)
    client = RecordingClient()
    script = write_script(tmp_path / "s.json", bash_turns(command))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client, args=("--config", str(config))) as run:
        session = await run.open_session(caps(terminal=terminal))
        assert await run.prompt(session, "go") == "end_turn"
    places = everything(run, data_dir, client)
    if terminal:  # the editor's own terminal holds the text; acpd only reads it from there
        places.pop("client")
        places["wire"] = "\n".join(
            line for line in places["wire"].splitlines() if ('"terminal/output"' not in line
            and '"output":' not in line) or '"sessionUpdate"' in line)
    assert not leaks(places, [line for line in lines if len(line) >= 16])
    assert "[REDACTED:private-key]" in places["sqlite file"]


TOKEN = "ghp_" + ALNUM + "abcd"


@pytest.mark.slow
async def test_a_token_split_across_reads_is_never_partly_shown(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    (workspace / "tok.txt").write_text(TOKEN)
    offsets = list(range(1, len(TOKEN)))
    # Each step prints "token: " and the first k characters, waits past a stream tick
    # (0.25 s), then prints the rest: the read before the wait must not show a partial token.
    steps = [f"printf 'token: '; head -c {k} tok.txt; sleep 0.4; tail -c +{k + 1} tok.txt; "
             "echo ' done'" for k in offsets]
    # (each command says which it is: identical outputs would stop the turn as a loop)
    commands = [f"echo part {i}; " + "; ".join(steps[i : i + 10])
                for i in range(0, len(steps), 10)]
    client = RecordingClient()
    script = write_script(tmp_path / "s.json", bash_turns(*commands))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session = await run.open_session(caps(terminal=False))
        assert await run.prompt(session, "go") == "end_turn"
    assert len(client.tool_calls()) == len(commands)
    places = everything(run, data_dir, client)
    # Not the value, nor any start of it longer than its fixed prefix.
    assert not leaks(places, [TOKEN[:5], TOKEN[4:12], TOKEN[-8:]])
    final = "".join(repr(client.final(c["toolCallId"])) for c in client.tool_calls())
    assert final.count("[REDACTED:github-token]") >= len(offsets)


async def test_a_secret_in_the_command_is_redacted_in_every_sink(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    bearer = "a1" + ALNUM + ".x-y_z"
    commands = [f"echo ghp_{ALNUM}abcd > /dev/null",
                f"curl -s -H 'Authorization: Bearer {bearer}' https://127.0.0.1:9/ || true",
                f"python3 -c 'print(1)' --token=ghp_{ALNUM}abcd"]
    client = RecordingClient()
    script = write_script(tmp_path / "s.json", bash_turns(*commands))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client) as run:
        session = await run.open_session(caps(terminal=False))
        assert await run.prompt(session, "go") == "end_turn"
    places = everything(run, data_dir, client)
    assert not leaks(places, [TOKEN, bearer, TOKEN[4:20], bearer[:16]])
    titles = [c["title"] for c in client.tool_calls()]
    assert all("[REDACTED:" in t for t in titles), titles
    asked = client.calls("session/request_permission")
    assert asked and "[REDACTED:" in repr(asked)
