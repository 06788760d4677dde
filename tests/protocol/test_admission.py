"""Admission at the in-flight limit (daemon/rpc.py): the reader waits for a slot while waiting
can help, and refuses (then reads on) only when it cannot: a request of ours to the editor is
unanswered (its answer may be behind the unread input), or nothing finished for `stall_wait`.
In process, over the in-memory transport of test_connection."""

from __future__ import annotations

from typing import Any

import anyio
import orjson

from acpd.daemon.rpc import Connection
from acpd.protocol.errors import ErrorCode
from tests.protocol.test_connection import Pipe, answer_to, req, run


def test_a_full_house_waiting_on_the_daemon_itself_is_waited_out_not_refused() -> None:
    """Requests held up by the daemon's own slow work (a start-up on a loaded machine) for
    many `slot_wait` windows: the burst behind them is served, none refused."""
    ready, full = anyio.Event(), anyio.Event()
    started: list[Any] = []

    async def handler(method: str, params: Any) -> Any:
        started.append(params)
        if len(started) == 4:
            full.set()
        await ready.wait()
        return params

    def setup(conn: Connection) -> None:
        conn.max_in_flight = 4
        conn.slot_wait = 0.02

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(b"".join(orjson.dumps(req(n, "echo", [n])) + b"\n" for n in range(40)))
        await full.wait()
        for _ in range(10):  # ten windows, with the reader waiting for a slot
            await anyio.sleep(conn.slot_wait)
        assert pipe.messages() == [] and len(started) == 4
        ready.set()
        await pipe.wait_for(lambda m: len(pipe.messages()) == 40)

    answers = run(handler, script, setup=setup).messages()
    assert sorted(m["result"][0] for m in answers) == list(range(40))


def test_a_full_house_waiting_on_the_editor_refuses_so_that_its_answers_are_read() -> None:
    """The deadlock the refusal exists for: every slot waits for an answer from the editor,
    and the editor's answers are behind requests the reader holds. Refusing reads on."""
    asked: list[Any] = []

    def setup(conn: Connection) -> None:
        conn.max_in_flight = 2
        conn.slot_wait = 0.05
        conn.stall_wait = 60  # far longer than the test: this refusal is not the stall's

        async def handler(method: str, params: Any) -> Any:
            asked.append(params["n"])
            return await conn.request("fs/read_text_file", {"path": str(params["n"])},
                                      timeout=None)

        conn.on_request = handler

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "read", {"n": 1}), req(2, "read", {"n": 2}))
        first = await pipe.wait_for(lambda m: m.get("params") == {"path": "1"})
        second = await pipe.wait_for(lambda m: m.get("params") == {"path": "2"})
        # A third request, then the answers the two running ones wait for.
        pipe.feed(req(3, "read", {"n": 3}))
        pipe.feed({"jsonrpc": "2.0", "id": first["id"], "result": "one"})
        pipe.feed({"jsonrpc": "2.0", "id": second["id"], "result": "two"})
        refused = await pipe.wait_for(answer_to(3))
        assert refused["error"]["code"] == ErrorCode.INVALID_REQUEST
        assert "too many requests" in refused["error"]["message"]
        assert (await pipe.wait_for(answer_to(1)))["result"] == "one"
        assert (await pipe.wait_for(answer_to(2)))["result"] == "two"

    async def unused(method: str, params: Any) -> Any:
        raise AssertionError("replaced by setup")

    run(unused, script, setup=setup)
    assert asked == [1, 2]


def test_a_stall_with_nothing_asked_of_the_editor_is_refused_after_stall_wait() -> None:
    """Nothing finishes and nothing waits on the editor: after `stall_wait` the request is
    refused, so that what follows it (a cancel, say) is read."""
    release = anyio.Event()

    async def handler(method: str, params: Any) -> Any:
        if method == "release":
            release.set()
            return "released"
        await release.wait()
        return "done"

    def setup(conn: Connection) -> None:
        conn.max_in_flight = 1
        conn.slot_wait = 0.02
        conn.stall_wait = 0.1

    async def script(pipe: Pipe, conn: Connection) -> None:
        pipe.feed(req(1, "wait"), req(2, "release"))
        refused = await pipe.wait_for(answer_to(2))
        assert refused["error"]["code"] == ErrorCode.INVALID_REQUEST
        release.set()
        assert (await pipe.wait_for(answer_to(1)))["result"] == "done"
        pipe.feed(req(3, "release"))
        assert (await pipe.wait_for(answer_to(3)))["result"] == "released"

    run(handler, script, setup=setup)
