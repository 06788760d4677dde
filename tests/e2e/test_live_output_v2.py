"""The v2 draft's display terminal and the stream's parts, below the wire: real bash through
the local runner with a v2 `TerminalStreams`, every update validated against the TS SDK's
schema/v2 (`SessionUpdate` branch of its kind), applied the way the RFD says a client must
(snapshots replace, chunks append, each decoded on its own); a slow client that makes the
stream drop to a snapshot; replay; and the redactor fed a secret cut at every offset.

(acpd answers `initialize` with protocol version 1 on this branch: the v2 negotiation is
another change. These tests drive the rendering that a v2 connection selects.)
"""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from acpd.daemon.local import LocalCommandRunner
from acpd.daemon.stream_redact import StreamRedactor, to_bytes
from acpd.daemon.terminal_stream import PENDING_LIMIT, TerminalStreams
from acpd.daemon.terminal_wire import replay
from acpd.tools.capabilities import CommandRequest
from acpd.tools.output import OutputStage
from acpd.tools.secrets import scan_secrets
from acpd.tools.spec import ToolCallView
from tests.e2e.schema import TS_DIR

pytestmark = pytest.mark.anyio

V2_SCHEMA = TS_DIR / "node_modules/@agentclientprotocol/sdk/schema/v2/schema.json"


@cache
def v2_validators() -> dict[str, Draft202012Validator]:
    document = json.loads(V2_SCHEMA.read_text())
    uri = "urn:acp:schema:v2"
    resource = Resource.from_contents({**document, "$id": uri},
                                      default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(uri, resource)
    union = document["$defs"]["SessionUpdate"]
    key = "oneOf" if "oneOf" in union else "anyOf"
    return {
        branch["properties"]["sessionUpdate"]["const"]: Draft202012Validator(
            {"$ref": f"{uri}#/$defs/SessionUpdate/{key}/{index}"}, registry=registry)
        for index, branch in enumerate(union[key])
        if "const" in branch.get("properties", {}).get("sessionUpdate", {})
    }


def assert_v2(update: dict[str, Any]) -> None:
    validator = v2_validators()[update["sessionUpdate"]]
    errors = [e.message for e in validator.iter_errors(update)]
    assert not errors, f"{update['sessionUpdate']} breaks schema/v2: {errors}"


class V2Client:
    """What the RFD asks of a client: per terminal, snapshots replace, chunks append."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.updates: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.screens: dict[str, bytes] = {}
        self.exits: dict[str, dict[str, Any]] = {}

    async def send(self, update: dict[str, Any]) -> None:
        if self.delay:
            await anyio.sleep(self.delay)  # a client that reads slowly
        assert_v2(update)
        self.updates.append(update)
        self.apply(update)

    def apply(self, update: dict[str, Any]) -> None:
        terminal = update["terminalId"]
        if update["sessionUpdate"] == "terminal_output_chunk":
            self.screens[terminal] = self.screens.get(terminal, b"") + base64.b64decode(
                update["data"])
            return
        if "output" in update:
            self.screens[terminal] = base64.b64decode(update["output"]["data"])
        if "exitStatus" in update:
            self.exits[terminal] = update["exitStatus"]

    def streams(self, cwd: str) -> TerminalStreams:
        return TerminalStreams("v2", self.send, self.records.append, OutputStage, cwd)


async def run_v2(
    workspace: Path, command: str, client: V2Client, limit: int = 1 << 24
) -> Any:
    runner = LocalCommandRunner(live=client.streams(str(workspace)))
    request = CommandRequest(command, str(workspace), 60.0, limit, roots=(str(workspace),),
                             call_id="call_1")
    embedded: list[str] = []

    async def on_terminal(terminal_id: str, release: Any) -> None:
        embedded.append(terminal_id)

    async def on_output(_text: str) -> None:
        raise AssertionError("a display terminal gets no card text")

    result = await runner.run(request, on_terminal, on_output)
    assert embedded == [result.terminal_id]
    return result


async def test_v2_terminal_updates_and_chunks_validate_and_rebuild_the_output(
    workspace: Path,
) -> None:
    client = V2Client()
    # Pauses far past the daemon's idle flush (20 ms), so that even a loaded machine sends
    # the parts as chunks of their own.
    command = ("printf 'caf\\303'; sleep 0.4; printf '\\251 \\377raw\\n'; "
               "for i in 1 2 3; do echo line$i; sleep 0.3; done; echo oops >&2; exit 4")
    result = await run_v2(workspace, command, client)
    terminal = result.terminal_id
    assert terminal == "term_call_1"
    kinds = [u["sessionUpdate"] for u in client.updates]
    assert kinds[0] == "terminal_update" and client.updates[0]["command"] == command
    assert client.updates[0]["cwd"] == str(workspace)
    assert kinds.count("terminal_output_chunk") >= 3
    assert client.updates[-1] == {"sessionUpdate": "terminal_update", "terminalId": terminal,
                                  "exitStatus": {"exitCode": 4, "signal": None}}
    # Byte-faithful: a character split across writes and a byte that is not UTF-8 survive.
    screen = client.screens[terminal]
    assert screen.startswith("café ".encode() + b"\xffraw\n")
    assert screen.decode("utf-8", "replace") == result.output
    assert b"oops\n" in screen

    (record,) = client.records
    replayed = list(replay([record], "v2"))
    assert len(replayed) == 1
    assert_v2(replayed[0])
    fresh = V2Client()
    fresh.apply(replayed[0])
    assert fresh.screens[terminal].decode("utf-8", "replace") == result.output
    assert fresh.exits[terminal] == {"exitCode": 4, "signal": None}
    assert list(replay([record], "plain")) == []


async def test_a_slow_client_gets_a_snapshot_instead_of_unbounded_memory(
    workspace: Path,
) -> None:
    client = V2Client(delay=0.05)
    size = 4 * PENDING_LIMIT
    result = await run_v2(workspace, f"head -c {size} /dev/zero | tr '\\0' 'x'; echo; "
                                     "echo the-end", client)
    terminal = result.terminal_id
    snapshots = [u for u in client.updates if "output" in u]
    assert snapshots and snapshots[0]["output"]["truncated"] is True
    shown = client.screens[terminal].decode()
    # What the client holds is the true end of the output, not a splice of two parts.
    assert shown.endswith("the-end\n") and result.output.endswith(shown)
    sent = sum(len(base64.b64decode(u.get("data") or u.get("output", {}).get("data", "")))
               for u in client.updates)
    assert sent < size  # most of the flood was never queued for the slow client


async def test_past_the_output_byte_limit_v2_gets_bounded_snapshots(workspace: Path) -> None:
    client = V2Client()
    limit = 4096
    result = await run_v2(workspace, "seq 1 30000", client, limit)
    chunks = [u for u in client.updates if u["sessionUpdate"] == "terminal_output_chunk"]
    streamed = sum(len(base64.b64decode(u["data"])) for u in chunks)
    assert 0 < streamed <= limit
    snapshots = [base64.b64decode(u["output"]["data"]) for u in client.updates if "output" in u]
    assert snapshots and all(len(s) <= limit for s in snapshots)
    shown = client.screens[result.terminal_id].decode()
    assert shown.endswith("\n30000\n") and result.output.endswith(shown)
    assert result.truncated


async def test_past_the_output_byte_limit_meta_says_so_then_shows_the_last_part(
    workspace: Path,
) -> None:
    sent: list[dict[str, Any]] = []

    async def send(update: dict[str, Any]) -> None:
        sent.append(update)

    streams = TerminalStreams("meta", send, lambda _r: None, OutputStage, str(workspace))
    view = ToolCallView("call_m", "seq", "execute", raw_input={"command": "seq 1 30000"})
    first: dict[str, Any] = {"sessionUpdate": "tool_call"}
    streams.decorate(view, first, first=True)
    assert first["_meta"]["terminal_info"]["terminal_id"] == "call_m"
    limit = 4096
    request = CommandRequest("seq 1 30000", str(workspace), 60.0, limit,
                             roots=(str(workspace),), call_id="call_m")

    async def ignore(*_args: Any) -> None:
        return None

    result = await LocalCommandRunner(live=streams).run(request, ignore, ignore)
    data = [u["_meta"]["terminal_output"]["data"] for u in sent
            if "terminal_output" in u["_meta"]]
    joined = "".join(data)
    head, note, rest = joined.partition("[acpd: the output passed its limit (4096 bytes)")
    assert note and len(head.encode()) <= limit + 2 and head.startswith("1\n2\n3\n")
    assert "bytes past the limit; their last part:]" in rest
    assert rest.endswith("\n29999\n30000\n") and len(rest.encode()) < 2 * limit
    assert sent[-1]["_meta"]["terminal_exit"] == {"terminal_id": "call_m", "exit_code": 0,
                                                  "signal": None}
    assert result.output.endswith("30000\n")


async def test_past_the_limit_a_plain_card_keeps_showing_the_tail(workspace: Path) -> None:
    shown: list[str] = []

    async def on_output(text: str) -> None:
        shown.append(text)

    async def on_terminal(*_args: Any) -> None:
        raise AssertionError("a plain card embeds no terminal")

    async def send(update: dict[str, Any]) -> None:
        raise AssertionError(f"a plain card sends no terminal updates: {update}")

    streams = TerminalStreams("plain", send, lambda _r: None, OutputStage, str(workspace))
    request = CommandRequest("seq 1 30000", str(workspace), 60.0, 4096,
                             roots=(str(workspace),), call_id="call_p")
    result = await LocalCommandRunner(live=streams).run(request, on_terminal, on_output)
    assert shown and shown[0].startswith("1\n2\n")
    assert shown[-1].endswith("\n29999\n30000\n") and len(shown[-1]) <= 4096
    assert result.terminal_id is None and result.output.endswith("30000\n")


async def test_a_timed_out_command_reports_its_signal(workspace: Path) -> None:
    client = V2Client()
    runner = LocalCommandRunner(live=client.streams(str(workspace)))
    request = CommandRequest("echo started; sleep 30", str(workspace), 0.5, 1 << 20,
                             roots=(str(workspace),), call_id="call_t")

    async def ignore(*_args: Any) -> None:
        return None

    result = await runner.run(request, ignore, ignore)
    terminal = result.terminal_id
    assert result.timed_out and terminal is not None
    exit_status = client.exits[terminal]
    assert exit_status["exitCode"] is None and exit_status["signal"] in ("SIGTERM", "SIGKILL")
    assert client.screens[terminal] == b"started\n"


async def test_a_client_that_never_reads_does_not_hold_the_result(workspace: Path) -> None:
    """Its sends never return: the command's result still comes (the stream's end waits
    CLOSE_BUDGET at most), whole."""
    client = V2Client(delay=3600)
    with anyio.fail_after(60):  # a hang, not a speed, is what this guards
        result = await run_v2(workspace, "seq 1 50000", client)
    assert result.exit_code == 0 and result.output.endswith("\n50000\n")
    assert client.updates == []
    (record,) = client.records  # the replay snapshot is still stored
    assert b"50000" in base64.b64decode(record["_meta"]["acpd/terminal"]["data"])


# --- the redactor --------------------------------------------------------------------------------

SECRETS = [  # (a line, the value in it that must never show)
    ("token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 end\n",
     "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ("Authorization: Bearer eyZ9k2Lm4Np6Qr8St0Uv2Wx4Yz6Ab8Cd\n",
     "eyZ9k2Lm4Np6Qr8St0Uv2Wx4Yz6Ab8Cd"),
    ("export DEPLOY_TOKEN=s3cr3tV4lu3Xy9Zq\n", "s3cr3tV4lu3Xy9Zq"),
    ("url https://deploy:hunter2hunter2@example.com/x ok\n", "hunter2hunter2"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("Authorization: Bearer\neyZ9k2Lm4Np6Qr8St0Uv2Wx4Yz6Ab8Cd\n",
     "eyZ9k2Lm4Np6Qr8St0Uv2Wx4Yz6Ab8Cd"),
    ("aws_secret_access_key =\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
]


def redact(text: str) -> str:
    return scan_secrets(text)[0]


def stream(pieces: list[bytes], flush_between: bool) -> list[str]:
    redactor = StreamRedactor(redact)
    out = []
    for piece in pieces:
        out.append(redactor.feed(piece))
        if flush_between:
            out.append(redactor.flush_partial())
    out.append(redactor.finish())
    return out


@pytest.mark.parametrize(("line", "secret"), SECRETS)
@pytest.mark.parametrize("flush_between", [False, True])
def test_a_secret_cut_at_any_offset_never_shows(
    line: str, secret: str, flush_between: bool
) -> None:
    whole = ("before\n" + line + "after\n").encode()
    expected = redact(whole.decode())
    assert secret not in expected, "the scanner must catch the sample"
    for cut in range(1, len(whole)):
        pieces = stream([whole[:cut], whole[cut:]], flush_between)
        joined = "".join(pieces)
        assert joined == expected, (cut, pieces)
        for piece in pieces:
            assert secret not in piece and secret[: len(secret) // 2] not in piece


def test_a_private_key_fed_line_by_line_never_shows() -> None:
    body = ["MIIEowIBAAKCAQEA7bq0" + "A" * 44] * 6
    text = "start\n-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + (
        "\n-----END RSA PRIVATE KEY-----\nafter\n")
    for flush in (False, True):
        pieces = stream([line.encode() + b"\n" for line in text.splitlines()], flush)
        joined = "".join(pieces)
        assert "MIIEowIBAAKCAQEA" not in joined
        assert joined.startswith("start\n") and joined.endswith("after\n")
        assert "[REDACTED:private-key]" in joined


@pytest.mark.parametrize("cut", ["-----BEGIN RSA ", "-----BEGIN RSA PRIVATE KEY-----",
                                 "-----BEGIN RSA PRIVATE KEY-----\nMIIE", "-----BEGIN "])
def test_a_key_whose_begin_line_went_out_in_part_is_still_held(cut: str) -> None:
    """A partial flush released the start of the BEGIN line (it ended in a space): the
    key's lines that follow, one read each, must still never show."""
    body = "MIIEowIBAAKCAQEA7bq0" + "B" * 44
    text = ("x\n-----BEGIN RSA PRIVATE KEY-----\n" + (body + "\n") * 5
            + "-----END RSA PRIVATE KEY-----\ny\n")
    head, rest = text[: text.index(cut) + len(cut)], text[text.index(cut) + len(cut):]
    pieces = [head.encode()] + [line.encode() + b"\n" for line in rest.split("\n")[:-1]]
    out = stream(pieces, flush_between=True)
    assert all("MIIEowIBAAKCAQEA" not in piece for piece in out), out
    joined = "".join(out)
    assert "[REDACTED:private-key]" in joined and joined.endswith("y\n")


def test_a_key_longer_than_the_hold_is_dropped_up_to_its_end_line() -> None:
    line = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9w\n"
    pieces = [b"-----BEGIN OPENSSH PRIVATE KEY-----\n"] + [line.encode()] * 3000 + [
        b"-----END OPENSSH PRIVATE KEY-----\nok\n"]
    joined = "".join(stream(pieces, False))
    assert line.strip() not in joined
    assert joined == "[REDACTED:private-key]\nok\n"


def test_bytes_that_are_not_utf8_and_split_characters_round_trip() -> None:
    data = "naïve ✓\n".encode() + b"\xff\xfe raw\n"
    for cut in range(1, len(data)):
        redactor = StreamRedactor(redact)
        out = redactor.feed(data[:cut]) + redactor.feed(data[cut:]) + redactor.finish()
        assert to_bytes(out) == data
