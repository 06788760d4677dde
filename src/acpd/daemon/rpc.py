"""The JSON-RPC connection: request ids, per-request tasks, cancellation, one error boundary.

Every outgoing message goes through one bounded queue and one writer task, so the order in
which handlers send is the order on the wire: an update sent before a response is read before
it. Every incoming request runs in its own task and cancel scope; `$/cancel_request` cancels
that scope and the request is answered -32800.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acpd.daemon.errors import PeerError, to_rpc_error
from acpd.daemon.stdio import FdReader, FdWriter
from acpd.protocol import jsonrpc
from acpd.protocol.errors import ErrorCode, RpcError, invalid_request
from acpd.protocol.framing import DEFAULT_MAX_LINE_BYTES, Line, LineDecoder, encode

log = logging.getLogger("acpd.rpc")

OUTBOX_SIZE = 4096


@dataclass(slots=True)
class Reply:
    """A result plus work to do once the response is queued (e.g. updates that must follow it)."""

    result: Any
    then: Callable[[], Awaitable[None]] | None = None


RequestHandler = Callable[[str, Any], Awaitable[Any]]
NotificationHandler = Callable[[str, Any], Awaitable[None]]


@dataclass(slots=True)
class _Pending:
    method: str
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: RpcError | None = None


class Connection:
    def __init__(
        self,
        reader: FdReader,
        writer: FdWriter,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._decoder = LineDecoder(max_line_bytes)
        self._send_stream: MemoryObjectSendStream[bytes]
        self._receive_stream: MemoryObjectReceiveStream[bytes]
        self._send_stream, self._receive_stream = anyio.create_memory_object_stream[bytes](
            OUTBOX_SIZE
        )
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._incoming: dict[jsonrpc.RequestId, anyio.CancelScope] = {}
        self._task_group: TaskGroup | None = None
        self.on_request: RequestHandler | None = None
        self.on_notification: NotificationHandler | None = None
        self.on_eof: Callable[[], Awaitable[None]] | None = None
        self.eof_grace = 0.8
        self.initialized = False
        self.closed = anyio.Event()

    @property
    def max_line_bytes(self) -> int:
        return self._decoder.max_line_bytes

    @max_line_bytes.setter
    def max_line_bytes(self, value: int) -> None:
        self._decoder.max_line_bytes = value

    # --- sending ---------------------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        await self._send_stream.send(encode(message))

    async def notify(self, method: str, params: Any) -> None:
        await self.send(jsonrpc.notification(method, params))

    async def request(self, method: str, params: Any, *, timeout: float | None = 30.0) -> Any:
        """Send a request to the editor and wait for its answer.

        Raises PeerError when the editor answers with an error or not within `timeout`
        seconds (None waits for ever, for user decisions). When the wait is cancelled the
        editor is told with `$/cancel_request`.
        """
        msg_id = next(self._ids)
        pending = _Pending(method)
        self._pending[msg_id] = pending
        answered = False
        try:
            await self.send(jsonrpc.request(msg_id, method, params))
            with anyio.fail_after(math.inf if timeout is None else timeout):
                await pending.done.wait()
            answered = True
        except TimeoutError:
            raise PeerError(method, None, f"no answer within {timeout:g} s") from None
        finally:
            self._pending.pop(msg_id, None)
            if not answered and not self.closed.is_set():
                with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                    await self.notify("$/cancel_request", {"requestId": msg_id})
        if pending.error is not None:
            raise PeerError(method, pending.error)
        return pending.result

    # --- the loops --------------------------------------------------------------------------

    async def serve(self) -> None:
        """Read until end of input, then cancel what runs and flush what was sent."""
        async with anyio.create_task_group() as writer_group:
            writer_group.start_soon(self._write_loop)
            try:
                async with anyio.create_task_group() as tg:
                    self._task_group = tg
                    await self._read_loop()
                    if self.on_eof is not None:
                        # Stop turns, kill children and release terminals, but never
                        # outlive the editor by more than the grace period.
                        with anyio.move_on_after(self.eof_grace):
                            await self.on_eof()
                    self.closed.set()
                    tg.cancel_scope.cancel()
            finally:
                self.closed.set()
                self._fail_pending("the editor closed the connection")
                await self._send_stream.aclose()

    async def _read_loop(self) -> None:
        while True:
            data = await self._reader.receive()
            frames = self._decoder.feed(data) if data else self._decoder.close()
            for frame in frames:
                await self._dispatch_frame(frame)
            if not data:
                return

    async def _write_loop(self) -> None:
        async with self._receive_stream:
            while True:
                try:
                    first = await self._receive_stream.receive()
                except anyio.EndOfStream:
                    return
                batch = [first]
                # Drain what is already queued so a burst of updates costs one write.
                while len(batch) < 512:
                    try:
                        batch.append(self._receive_stream.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                try:
                    await self._writer.send(b"".join(batch))
                except OSError as exc:
                    log.error("cannot write to the editor: %s", exc)
                    return

    # --- dispatch ---------------------------------------------------------------------------

    async def _dispatch_frame(self, frame: Line | Any) -> None:
        if not isinstance(frame, Line):
            err = invalid_request(
                f"message of {frame.size} bytes exceeds the line limit of "
                f"{self._decoder.max_line_bytes} bytes"
            )
            await self.send(jsonrpc.error(jsonrpc.sniff_id(frame.head), err))
            return
        message = jsonrpc.parse_line(frame.data)
        if isinstance(message, jsonrpc.Request):
            await self._start_request(message)
        elif isinstance(message, jsonrpc.Notification):
            await self._handle_notification(message)
        elif isinstance(message, jsonrpc.Response):
            self._resolve(message)
        else:
            await self.send(jsonrpc.error(message.id, message.error))

    async def _start_request(self, req: jsonrpc.Request) -> None:
        if req.id in self._incoming:
            err = invalid_request("a request with this id is still in progress")
            await self.send(jsonrpc.error(req.id, err))
            return
        if not self.initialized and req.method != "initialize":
            err = invalid_request("not initialized: send initialize first")
            await self.send(jsonrpc.error(req.id, err))
            return
        scope = anyio.CancelScope()
        self._incoming[req.id] = scope
        if req.method == "initialize":
            # Answered before the next frame is read, so a request that follows it on the
            # wire never sees an uninitialised connection.
            await self._run_request(req, scope)
            return
        assert self._task_group is not None
        self._task_group.start_soon(self._run_request, req, scope)

    async def _run_request(self, req: jsonrpc.Request, scope: anyio.CancelScope) -> None:
        reply: Reply | None = None
        error: RpcError | None = None
        try:
            with scope:
                assert self.on_request is not None
                outcome = await self.on_request(req.method, req.params)
                reply = outcome if isinstance(outcome, Reply) else Reply(outcome)
            if scope.cancelled_caught:
                error = RpcError(ErrorCode.REQUEST_CANCELLED, "request cancelled")
        except Exception as exc:  # the error boundary: nothing a handler raises ends the process
            error = to_rpc_error(exc)
        finally:
            self._incoming.pop(req.id, None)
        if self.closed.is_set():
            return
        if error is not None:
            await self.send(jsonrpc.error(req.id, error))
            return
        assert reply is not None
        await self.send(jsonrpc.result(req.id, reply.result))
        if reply.then is not None:
            assert self._task_group is not None
            self._task_group.start_soon(self._follow_up, req.method, reply.then)

    async def _follow_up(self, method: str, then: Callable[[], Awaitable[None]]) -> None:
        try:
            await then()
        except Exception:
            log.exception("follow-up of %s failed", method)

    async def _handle_notification(self, note: jsonrpc.Notification) -> None:
        if note.method == "$/cancel_request":
            request_id = note.params.get("requestId") if isinstance(note.params, dict) else None
            scope = self._incoming.get(request_id) if isinstance(request_id, int | str) else None
            if scope is not None:
                scope.cancel()
            return
        if self.on_notification is None:
            return
        try:
            await self.on_notification(note.method, note.params)
        except Exception as exc:  # a notification has nobody to answer; log and go on
            log.warning("notification %s failed: %s", note.method[:80], to_rpc_error(exc).message)

    def _resolve(self, response: jsonrpc.Response) -> None:
        pending = self._pending.get(response.id) if isinstance(response.id, int) else None
        if pending is None:
            log.debug("ignoring a response to unknown request %r", response.id)
            return
        pending.result = response.result
        pending.error = response.error
        pending.done.set()

    def _fail_pending(self, reason: str) -> None:
        for pending in self._pending.values():
            pending.error = RpcError(ErrorCode.INTERNAL_ERROR, reason)
            pending.done.set()
