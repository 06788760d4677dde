"""The connection's limits and error boundary, in process, over an in-memory transport."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import orjson
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acpd.daemon.errors import PeerError
from acpd.daemon.outbox import OUTBOX_SIZE
from acpd.daemon.rpc import Connection, Reply
from acpd.protocol.errors import ErrorCode, invalid_params


class Pipe:
    """The editor's side: what it writes is our input, what we write lands in `out`."""

    def __init__(self) -> None:
        self._to_us: MemoryObjectSendStream[bytes]
        self._from_peer: MemoryObjectReceiveStream[bytes]
        self._to_us, self._from_peer = anyio.create_memory_object_stream[bytes](1000)
        self.out = bytearray()
        self.wrote = anyio.Event()
        self.fail_writes = False
        self.block_writes = False
        self.slow_writes = False
        """send_nowait takes nothing: every write goes through the writer task."""

    # ByteReceiver / ByteSender
    async def receive(self) -> bytes:
        try:
            return await self._from_peer.receive()
        except anyio.EndOfStream:
            return b""

    def send_nowait(self, data: bytes) -> int:
        if self.fail_writes:
            raise BrokenPipeError(32, "Broken pipe")
        if self.block_writes or self.slow_writes:
            return 0
        self._wrote(data)
        return len(data)

    async def send(self, data: bytes) -> None:
        if self.fail_writes:
            raise BrokenPipeError(32, "Broken pipe")
        if self.block_writes:
            await anyio.sleep_forever()
        self._wrote(data)

    def _wrote(self, data: bytes) -> None:
        self.out += data
        self.wrote.set()
        self.wrote = anyio.Event()

    # the editor
    def feed(self, *messages: dict[str, Any] | bytes) -> None:
        for message in messages:
            data = message if isinstance(message, bytes) else orjson.dumps(message) + b"\n"
            self._to_us.send_nowait(data)

    def eof(self) -> None:
        self._to_us.close()

    def messages(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in bytes(self.out).splitlines()]

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        with anyio.fail_after(5):
            while True:
                for message in self.messages():
                    if predicate(message):
                        return message
                await self.wrote.wait()


def req(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def answer_to(msg_id: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda m: m.get("id") == msg_id and "method" not in m


Handler = Callable[[str, Any], Awaitable[Any]]


def run(
    handler: Handler,
    script: Callable[[Pipe, Connection], Awaitable[None]],
    *,
    initialized: bool = True,
    setup: Callable[[Connection], None] | None = None,
) -> Pipe:
    pipe = Pipe()

    async def main() -> None:
        conn = Connection(pipe, pipe)
        conn.on_request = handler
        conn.initialized = initialized
        if setup is not None:
            setup(conn)
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.serve)
            await script(pipe, conn)
            pipe.eof()
            with anyio.fail_after(5):
                await conn.closed.wait()

    anyio.run(main)
    return pipe


async def echo(method: str, params: Any) -> Any:
    if method == "echo":
        return params
    if method == "slow":
        await anyio.sleep(30)
    if method == "bad":
        raise invalid_params("bad")
    raise RuntimeError("unexpected")


def test_requests_answered_and_unknown_handler_errors_are_generic_internal_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "echo", {"a": 1}), req(2, "bad", {}), req(3, "other", []))
        await pipe.wait_for(answer_to(3))

    pipe = run(echo, script)
    answers = {m["id"]: m for m in pipe.messages()}
    assert answers[1]["result"] == {"a": 1}
    assert answers[2]["error"] == {"code": -32602, "message": "bad"}
    assert answers[3]["error"]["code"] == ErrorCode.INTERNAL_ERROR
    assert "unexpected" not in str(answers[3])


def test_a_request_before_initialize_is_refused() -> None:
    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "echo", {}))
        await pipe.wait_for(answer_to(1))

    pipe = run(echo, script, initialized=False)
    error = pipe.messages()[0]["error"]
    assert error["code"] == ErrorCode.INVALID_REQUEST and "initialize" in error["message"]


def test_an_exception_in_on_notification_is_logged_and_the_connection_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []

    async def on_notification(method: str, params: Any) -> None:
        calls.append(method)
        if method == "explode":
            raise ValueError("boom")
        if method == "cancel":
            raise invalid_params("bad session id")

    def setup(conn: Connection) -> None:
        conn.on_notification = on_notification

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(
            {"jsonrpc": "2.0", "method": "explode"},
            {"jsonrpc": "2.0", "method": "cancel", "params": {}},
            req(1, "echo", {"still": "alive"}),
        )
        await pipe.wait_for(answer_to(1))

    with caplog.at_level(logging.WARNING):
        pipe = run(echo, script, setup=setup)
    assert calls == ["explode", "cancel"]
    assert pipe.messages() == [{"jsonrpc": "2.0", "id": 1, "result": {"still": "alive"}}]
    assert any("explode" in r.getMessage() for r in caplog.records)


def test_cancel_request_cancels_that_request_only_and_a_bool_id_is_not_id_1() -> None:
    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "slow"), req("1", "slow"))
        cancel = {"jsonrpc": "2.0", "method": "$/cancel_request"}
        pipe.feed(
            {**cancel, "params": {"requestId": True}},
            {**cancel, "params": {"requestId": 1.0}},
            {**cancel, "params": {"requestId": 99}},
            {**cancel, "params": []},
            {**cancel},
            req(2, "echo", 2),
        )
        await pipe.wait_for(answer_to(2))
        assert len(pipe.messages()) == 1  # nothing cancelled by the odd ids
        pipe.feed({**cancel, "params": {"requestId": "1"}})
        cancelled = await pipe.wait_for(answer_to("1"))
        assert cancelled["error"]["code"] == ErrorCode.REQUEST_CANCELLED
        pipe.feed({**cancel, "params": {"requestId": 1}})
        cancelled = await pipe.wait_for(answer_to(1))
        assert cancelled["error"] == {"code": -32800, "message": "request cancelled"}

    run(echo, script)


def test_a_duplicate_id_in_flight_is_refused_and_the_first_still_answers() -> None:
    release = anyio.Event()

    async def handler(method: str, params: Any) -> Any:
        await release.wait()
        return "first"

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(7, "wait"), req(7, "wait"))
        refused = await pipe.wait_for(answer_to(7))
        assert refused["error"]["code"] == ErrorCode.INVALID_REQUEST
        release.set()
        await pipe.wait_for(lambda m: m.get("result") == "first")
        pipe.feed(req(7, "wait"))  # free again once answered
        await pipe.wait_for(lambda m: len([x for x in pipe.messages() if "result" in x]) == 2)

    run(handler, script)


def test_requests_beyond_the_in_flight_limit_are_refused_not_queued() -> None:
    release = anyio.Event()
    follow_up_release = anyio.Event()

    async def handler(method: str, params: Any) -> Any:
        if method == "follow":
            return Reply("ok", then=follow_up_release.wait)
        await release.wait()
        return "done"

    def setup(conn: Connection) -> None:
        conn.max_in_flight = 3
        conn.slot_wait = 0.05
        conn.stall_wait = 0.2  # the handlers wait on events nothing sets: a stall

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "follow"))
        await pipe.wait_for(answer_to(1))  # answered; its follow-up still holds a slot
        pipe.feed(req(2, "wait"), req(3, "wait"), req(4, "wait"))
        refused = await pipe.wait_for(answer_to(4))
        assert refused["error"]["code"] == ErrorCode.INVALID_REQUEST
        assert "too many requests" in refused["error"]["message"]
        follow_up_release.set()
        await anyio.sleep(0.01)
        pipe.feed(req(5, "wait"))
        release.set()
        for msg_id in (2, 3, 5):
            assert (await pipe.wait_for(answer_to(msg_id)))["result"] == "done"

    run(handler, script, setup=setup)


def test_a_result_that_cannot_be_encoded_is_an_internal_error_not_a_dead_daemon() -> None:
    async def handler(method: str, params: Any) -> Any:
        if method == "set":
            return {"x": {1, 2}}
        if method == "surrogate":
            return {"text": b"\xff".decode("utf-8", "surrogateescape")}
        return "fine"

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "set"), req(2, "surrogate"), req(3, "ok"))
        await pipe.wait_for(answer_to(3))
        await pipe.wait_for(answer_to(2))

    answers = {m["id"]: m for m in run(handler, script).messages()}
    assert answers[1]["error"]["code"] == ErrorCode.INTERNAL_ERROR
    assert answers[2]["result"] == {"text": "\ufffd"}
    assert answers[3]["result"] == "fine"


def test_requests_to_the_editor_time_out_and_a_late_answer_is_ignored() -> None:
    async def script(pipe: Pipe, conn: Connection) -> None:
        with pytest.raises(PeerError, match="no answer within"):
            await conn.request("fs/read_text_file", {"path": "/x"}, timeout=0.05)
        sent = await pipe.wait_for(lambda m: m.get("method") == "fs/read_text_file")
        await pipe.wait_for(lambda m: m.get("method") == "$/cancel_request")
        pipe.feed({"jsonrpc": "2.0", "id": sent["id"], "result": {"content": "late"}})
        pipe.feed({"jsonrpc": "2.0", "id": 12345, "result": {}})  # a response to nothing
        pipe.feed({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}})

        async def answer() -> None:
            msg = await pipe.wait_for(lambda m: m.get("params") == {"n": 2})
            pipe.feed({"jsonrpc": "2.0", "id": msg["id"], "result": "two"})
            pipe.feed({"jsonrpc": "2.0", "id": msg["id"], "result": "duplicate"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer)
            assert await conn.request("x", {"n": 2}, timeout=5) == "two"
        pipe.feed({"jsonrpc": "2.0", "method": "unknown/notification", "params": {}})
        pipe.feed(req(1, "echo", ["sync"]))
        await pipe.wait_for(answer_to(1))

    pipe = run(echo, script)
    # Nothing was answered but the request: no errors for the stray responses.
    assert [m for m in pipe.messages() if "method" not in m] == [
        {"jsonrpc": "2.0", "id": 1, "result": ["sync"]}
    ]


def test_a_peer_error_answer_raises_peer_error() -> None:
    async def script(pipe: Pipe, conn: Connection) -> None:
        async def answer() -> None:
            msg = await pipe.wait_for(lambda m: m.get("method") == "terminal/create")
            pipe.feed(
                {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer)
            with pytest.raises(PeerError) as info:
                await conn.request("terminal/create", {}, timeout=5)
        assert info.value.error is not None and info.value.error.code == -32601

    run(echo, script)


def test_eof_fails_pending_requests_to_the_editor() -> None:
    errors: list[str] = []

    async def handler(method: str, params: Any) -> Any:
        return "unused"

    pipe = Pipe()

    async def main() -> None:
        conn = Connection(pipe, pipe)
        conn.on_request = handler

        async def ask() -> None:
            try:
                await conn.request("session/request_permission", {}, timeout=None)
            except PeerError as exc:
                errors.append(str(exc))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(conn.serve)
                tg.start_soon(ask)
                await pipe.wait_for(lambda m: m.get("method") == "session/request_permission")
                pipe.eof()

    anyio.run(main)  # fail_after: the request waits forever unless EOF fails it
    assert errors and "closed its end of the connection" in errors[0]


def test_a_broken_stdout_never_blocks_senders_and_eof_still_ends_serve() -> None:
    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.fail_writes = True
        with anyio.fail_after(5):
            for n in range(10_000):  # more than the outbox holds
                await conn.notify("session/update", {"n": n})
        pipe.feed(req(1, "echo", [1]), b"garbage\n")
        await anyio.sleep(0.05)

    pipe = run(echo, script)
    assert pipe.out == b""


def test_an_editor_that_stops_reading_cannot_keep_the_daemon_after_eof() -> None:
    pipe = Pipe()

    async def main() -> None:
        conn = Connection(pipe, pipe)
        conn.on_request = echo
        conn.initialized = True
        conn.flush_grace = 0.2
        pipe.block_writes = True
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(conn.serve)
                pipe.feed(req(1, "echo", [1]))
                await anyio.sleep(0.05)
                pipe.eof()

    anyio.run(main)  # fail_after: nobody ever reads, so only the grace can end it


def test_oversize_lines_are_answered_with_the_sniffed_id_and_the_next_line_parses() -> None:
    def setup(conn: Connection) -> None:
        conn.max_line_bytes = 1024

    async def script(pipe: Pipe, conn: Connection) -> None:
        big = orjson.dumps(req(5, "echo", {"x": "y" * 5000})) + b"\n"
        for start in range(0, len(big), 100):
            pipe.feed(big[start : start + 100])
        pipe.feed(req(6, "echo", ["small"]))
        await pipe.wait_for(answer_to(6))

    answers = {m["id"]: m for m in run(echo, script, setup=setup).messages()}
    assert answers[5]["error"]["code"] == ErrorCode.INVALID_REQUEST
    assert "1024" in answers[5]["error"]["message"]
    assert answers[6]["result"] == ["small"]


def test_a_read_error_is_treated_as_end_of_input() -> None:
    class Broken(Pipe):
        async def receive(self) -> bytes:
            raise OSError(5, "Input/output error")

    pipe = Broken()

    async def main() -> None:
        conn = Connection(pipe, pipe)
        conn.on_request = echo
        with anyio.fail_after(5):
            await conn.serve()

    anyio.run(main)


def test_at_the_limit_a_burst_waits_briefly_for_a_slot_instead_of_being_refused() -> None:
    async def handler(method: str, params: Any) -> Any:
        await anyio.sleep(0.01)
        return params

    def setup(conn: Connection) -> None:
        conn.max_in_flight = 2
        conn.slot_wait = 5

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(b"".join(orjson.dumps(req(n, "echo", [n])) + b"\n" for n in range(20)))
        await pipe.wait_for(lambda m: len(pipe.messages()) == 20)

    answers = run(handler, script, setup=setup).messages()
    assert sorted(m["result"][0] for m in answers) == list(range(20))


def test_requests_to_the_editor_fail_at_once_when_stdout_is_broken() -> None:
    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.fail_writes = True
        with anyio.fail_after(5), pytest.raises(PeerError, match="cannot write"):
            await conn.request("session/request_permission", {}, timeout=None)
        with anyio.fail_after(5), pytest.raises(PeerError, match="cannot write"):
            await conn.request("fs/read_text_file", {}, timeout=None)

    run(echo, script)


def test_what_the_pipe_does_not_take_at_once_goes_out_whole_and_in_order() -> None:
    """The writer task's path: every write is left to it, and bursts still arrive in order."""

    async def handler(method: str, params: Any) -> Any:
        conn = params_conn[0]
        for index in range(params["updates"]):
            await conn.notify("update", {"n": index, "of": params["id"]})
        return params["id"]

    params_conn: list[Connection] = []

    def setup(conn: Connection) -> None:
        params_conn.append(conn)

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.slow_writes = True
        pipe.feed(*[req(i, "burst", {"id": i, "updates": 50}) for i in range(40)])
        with anyio.fail_after(10):
            while pipe.out.count(b'"result"') < 40:
                await pipe.wrote.wait()

    pipe = run(handler, script, setup=setup)
    messages = pipe.messages()
    assert len(messages) == 40 * 51
    for request_id in range(40):
        mine = [m for m in messages if m.get("params", {}).get("of") == request_id]
        assert [m["params"]["n"] for m in mine] == list(range(50))
        answer_at = next(i for i, m in enumerate(messages) if m.get("id") == request_id)
        # Each handler's updates were sent before its answer, so they are read before it.
        assert messages.index(mine[-1]) < answer_at


def test_a_sender_waits_for_room_in_a_full_outbox_and_nothing_is_lost() -> None:
    total = OUTBOX_SIZE * 2

    async def handler(method: str, params: Any) -> Any:
        conn = params_conn[0]
        for index in range(total):
            await conn.notify("update", index)
        return "done"

    params_conn: list[Connection] = []

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.slow_writes = True
        pipe.feed(req(1, "flood"))
        await pipe.wait_for(answer_to(1))

    pipe = run(handler, script, setup=params_conn.append)
    notes = [m["params"] for m in pipe.messages() if m.get("method") == "update"]
    assert notes == list(range(total))


def test_eof_cancels_running_requests_and_their_cleanup_runs() -> None:
    cleaned: list[str] = []
    started: list[str] = []

    async def handler(method: str, params: Any) -> Any:
        try:
            started.append(method)
            await anyio.sleep_forever()
        finally:
            cleaned.append(method)

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "forever"), req(2, "forever"))
        with anyio.fail_after(5):
            while len(started) < 2:  # noqa: ASYNC110 (both handlers must be running)
                await anyio.sleep(0.01)

    pipe = run(handler, script)  # the handlers sleep forever: only EOF can end them
    assert sorted(cleaned) == ["forever", "forever"]
    assert pipe.messages() == []  # nobody is left to answer


def test_a_cancel_that_arrives_after_the_handler_finished_changes_nothing() -> None:
    async def handler(method: str, params: Any) -> Any:
        return "finished"

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.slow_writes = True  # the answer is still being written when the cancel comes
        pipe.feed(req(1, "quick"))
        await pipe.wait_for(answer_to(1))
        pipe.feed({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}})
        pipe.feed(req(2, "quick"))
        await pipe.wait_for(answer_to(2))

    pipe = run(handler, script)
    assert [m.get("result") for m in pipe.messages()] == ["finished", "finished"]


def test_after_a_write_the_loop_polls_for_the_linger_time_then_sleeps() -> None:
    seen: dict[str, Any] = {}

    async def handler(method: str, params: Any) -> Any:
        return "ok"

    def setup(conn: Connection) -> None:
        conn.outbox.linger = 0.05
        seen["conn"] = conn

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "x"))
        await pipe.wait_for(answer_to(1))
        seen["lingering right after the answer"] = conn.outbox.lingering
        await anyio.sleep(0.2)
        seen["lingering later"] = conn.outbox.lingering
        conn.outbox.linger = 0
        pipe.feed(req(2, "x"))
        await pipe.wait_for(answer_to(2))
        seen["lingering with linger 0"] = conn.outbox.lingering

    run(handler, script, setup=setup)
    assert seen["lingering right after the answer"] is True
    assert seen["lingering later"] is False
    assert seen["lingering with linger 0"] is False
