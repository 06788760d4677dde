"""The JSON-RPC connection: request ids, per-request tasks, cancellation, one error boundary.

Every outgoing message goes through one ordered, bounded outbox (daemon/outbox.py), so the
order in which handlers send is the order on the wire.

Every incoming request runs in its own asyncio task, which the connection tracks itself (an
anyio task group and cancel scope cost ~20 µs per request, several times what a request like
`session/set_mode` costs). `$/cancel_request` cancels that task while its handler runs and
the request is answered -32800; at shutdown the connection cancels the tasks and waits for
them.

Limits, so that no peer can make the daemon grow without bound or hang:

- The outbox holds OUTBOX_SIZE messages. When it is full, senders wait (backpressure): a
  peer that stops reading its stdout stops being read, and stalls only itself.
- At most `max_in_flight` requests (with their follow-ups) run at once. The reader yields
  after every DISPATCH_BATCH frames it dispatches, so a pipelined burst is served as it
  arrives. At the limit the reader stops reading (the peer's pipe fills, and the peer
  waits) until a slot frees; it answers -32600 instead, and reads on, only when waiting
  cannot help:
  - we wait on the editor (a request of ours is unanswered: its answer may be behind the
    unread input) and no slot freed for `slot_wait` seconds: a deadlock otherwise;
  - no slot freed for `stall_wait` seconds at all: something is stuck, and the editor's
    cancels must be read.
  Otherwise the running requests wait on the daemon's own work (start-up loading the
  runtime, handlers computing, a slow reader draining the outbox), which ends without
  reading: on a loaded machine that can take many seconds, and a burst is then served,
  not refused. Queueing instead would grow without bound.
- A line is capped by the decoder (`max_line_bytes`); an oversize line is answered -32600
  and skipped.
- At stdin EOF (or `stop()`, on SIGTERM) the daemon stops its work (`on_eof`: commands
  killed, cards closed, results written, store closed) within `stop_grace` seconds, gives
  the request tasks still running `eof_grace` more, then gives the writer `flush_grace`
  seconds to deliver what is queued before it gives up on the editor: 2.8 s at most.

Nothing the peer sends raises out of `serve()`: peer faults are answered with -32700,
-32600, -32601 or -32602 and everything else a handler raises becomes -32603 here.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from acpd.daemon.errors import PeerError, to_rpc_error
from acpd.daemon.outbox import Outbox
from acpd.daemon.stdio import ByteReceiver, ByteSender
from acpd.protocol import jsonrpc
from acpd.protocol.errors import ErrorCode, RpcError, internal_error, invalid_request
from acpd.protocol.framing import DEFAULT_MAX_LINE_BYTES, Frame, Line, LineDecoder, encode

log = logging.getLogger("acpd.rpc")

DISPATCH_BATCH = 32  # frames of a pipelined burst dispatched between two checkpoints
MAX_IN_FLIGHT = 1024
FLUSH_GRACE = 1.0
STOP_GRACE = 1.5
"""The ordered stop (`on_eof`): 0.5 s from TERM to KILL, then up to 1 s to close the cards."""
EOF_GRACE = 0.3
SLOT_WAIT = 1.0
STALL_WAIT = 60.0


@dataclass(slots=True)
class Reply:
    """A result plus work to do once the response is queued (e.g. updates that must follow it)."""

    result: Any
    then: Callable[[], Awaitable[None]] | None = None


class Renderer(Protocol):
    """Rewrites outgoing traffic into the negotiated protocol version (see `renderer`)."""

    async def notification(self, method: str, params: Any) -> list[tuple[str, Any]]: ...

    async def request(self, method: str, params: Any) -> tuple[list[tuple[str, Any]], Any]:
        """Notifications to send first, and the params. Raises LookupError to refuse."""
        ...


class EditorPeer(Protocol):
    """What a session needs of its editor: the connection itself, or, in the shared daemon,
    a link that follows the session from window to window (acpd/remote/link.py)."""

    @property
    def input_closed(self) -> bool: ...

    async def notify(self, method: str, params: Any) -> None: ...

    async def request(
        self, method: str, params: Any, *, timeout: float | None = 30.0  # noqa: ASYNC109
    ) -> Any: ...


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
        reader: ByteReceiver,
        writer: ByteSender,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        initial: bytes = b"",
    ) -> None:
        self._reader = reader
        self._initial = initial
        """Bytes already read before the loop started (see daemon/handshake.py)."""
        self._decoder = LineDecoder(max_line_bytes)
        # Nobody can answer what we asked once a write fails: fail it now, not at a timeout.
        self.outbox = Outbox(writer, lambda: self._fail_pending("cannot write to the editor"))
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._incoming: dict[jsonrpc.RequestId, asyncio.Task[None]] = {}
        """Requests whose handler runs: the ones `$/cancel_request` can still cancel."""
        self._cancel_asked: set[jsonrpc.RequestId] = set()
        self._request_tasks: set[asyncio.Task[None]] = set()
        self._active = 0  # running request tasks and their follow-ups
        self._task_group: TaskGroup | None = None
        self.on_request: RequestHandler | None = None
        self.on_notification: NotificationHandler | None = None
        self.on_eof: Callable[[], Awaitable[None]] | None = None
        self.stop_grace = STOP_GRACE
        self.eof_grace = EOF_GRACE
        self.flush_grace = FLUSH_GRACE
        self.max_in_flight = MAX_IN_FLIGHT
        self.slot_wait = SLOT_WAIT
        self.stall_wait = STALL_WAIT
        self._slot_freed = anyio.Event()
        self._background: list[Callable[[], Awaitable[None]]] = []
        self.initialized = False
        self.batches: Callable[[bytes], list[jsonrpc.Message] | None] | None = None
        """Set when the negotiated version takes JSON-RPC batches (v2): a line's messages, or
        None when the line is not a batch (v1 answers a batch -32600)."""
        self.renderer: Renderer | None = None
        """Set for a connection that negotiated another protocol version than the core's
        (the v2 draft, daemon/v2face.py): every outgoing request and notification passes it."""
        self.input_closed = False
        """Stdin reached EOF: the editor can send nothing more, answers included."""
        self.closed = anyio.Event()
        self._read_scope = anyio.CancelScope()
        self._loop: asyncio.AbstractEventLoop  # set by serve(), where requests start

    @property
    def max_line_bytes(self) -> int:
        return self._decoder.max_line_bytes

    @max_line_bytes.setter
    def max_line_bytes(self, value: int) -> None:
        self._decoder.max_line_bytes = value

    # --- sending ---------------------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        """Queue one message; waits while the outbox is full. After the connection has
        shut down the message is dropped: there is nobody left to read it."""
        await self.outbox.put(encode(message))

    async def notify(self, method: str, params: Any) -> None:
        if self.renderer is None:
            await self.send(jsonrpc.notification(method, params))
            return
        for name, rendered in await self.renderer.notification(method, params):
            await self.send(jsonrpc.notification(name, rendered))

    async def request(
        self,
        method: str,
        params: Any,
        *,
        timeout: float | None = 30.0,  # noqa: ASYNC109 (public API; a per-call limit)
    ) -> Any:
        """Send a request to the editor and wait for its answer.

        Raises PeerError when the editor answers with an error or not within `timeout`
        seconds (None waits for ever, for user decisions). When the wait is cancelled the
        editor is told with `$/cancel_request`.
        """
        if self.renderer is not None:
            try:
                first, params = await self.renderer.request(method, params)
            except LookupError as exc:  # a method the negotiated version does not have
                raise PeerError(method, RpcError(ErrorCode.METHOD_NOT_FOUND, str(exc))) from None
            for name, note in first:
                await self.send(jsonrpc.notification(name, note))
        msg_id = next(self._ids)
        pending = _Pending(method)
        self._pending[msg_id] = pending
        answered = False
        try:
            await self.send(jsonrpc.request(msg_id, method, params))
            if self.outbox.failed:
                self._fail_pending("cannot write to the editor")
            elif self.input_closed:
                # Still sent (an editor that reads on can act on a kill or a release), but
                # no answer can arrive.
                self._fail_pending("the editor closed its end of the connection")
            with anyio.fail_after(math.inf if timeout is None else timeout):
                await pending.done.wait()
            answered = True
        except TimeoutError:
            raise PeerError(method, None, f"no answer within {timeout:g} s") from None
        finally:
            self._pending.pop(msg_id, None)
            if not answered and not self.closed.is_set() and not self.input_closed:
                with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                    await self.notify("$/cancel_request", {"requestId": msg_id})
        if pending.error is not None:
            raise PeerError(method, pending.error)
        return pending.result

    # --- the loops --------------------------------------------------------------------------

    async def serve(self) -> None:
        """Read until end of input, then cancel what runs and flush what was sent."""
        # Looked up once: on Python 3.11 each get_running_loop() is a getpid() system call.
        self._loop = asyncio.get_running_loop()
        async with anyio.create_task_group() as writer_group:
            writer_group.start_soon(self.outbox.run_writer)
            try:
                async with anyio.create_task_group() as tg:
                    self._task_group = tg
                    for job in self._background:
                        tg.start_soon(self._run_background, job)
                    self._background.clear()
                    with self._read_scope:
                        await self._read_loop()
                    if self._read_scope.cancel_called:
                        self._input_ended("acpd is stopping")
                    if self.on_eof is not None:
                        # Stop turns, kill children and release terminals, but never
                        # outlive the editor by more than the grace period.
                        with anyio.move_on_after(self.stop_grace):
                            try:
                                await self.on_eof()
                            except Exception:
                                log.exception("shutdown failed")
                    self.closed.set()
                    tg.cancel_scope.cancel()
            finally:
                self.closed.set()
                self._fail_pending("the editor closed the connection")
                await self._stop_requests()
                self.outbox.close()
                # Deliver what is queued, but not to an editor that stopped reading.
                writer_group.cancel_scope.deadline = anyio.current_time() + self.flush_grace

    def start_soon(self, job: Callable[[], Awaitable[None]]) -> None:
        """Run `job` as a background task of this connection (from `serve()` on)."""
        if self._task_group is None:
            self._background.append(job)
        else:
            self._task_group.start_soon(self._run_background, job)

    async def _stop_requests(self) -> None:
        """Cancel the request tasks and wait (shielded, at most `eof_grace`) until they end."""
        tasks = [task for task in self._request_tasks if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.eof_grace):
                await asyncio.wait(tasks)

    async def _read_loop(self) -> None:
        if self._initial:
            await self._dispatch_all(self._decoder.feed(self._initial))
            self._initial = b""
        while True:
            try:
                data = await self._reader.receive()
            except OSError as exc:
                log.error("cannot read from the editor, stopping: %s", exc)
                data = b""
            frames = self._decoder.feed(data) if data else self._decoder.close()
            await self._dispatch_all(frames)
            if not data:
                self._input_ended("the editor closed its end of the connection")
                return

    def _input_ended(self, reason: str) -> None:
        # Nothing can answer our requests any more: fail the waits now, so the shutdown
        # path (kill, release) does not sit out every timeout.
        self.input_closed = True
        self._fail_pending(reason)

    def stop(self) -> None:
        """Stop as at the end of input (a signal asked for it): stop reading, stop the work
        (`on_eof`), deliver what is queued. Safe to call at any time, more than once."""
        self._read_scope.cancel()

    async def _dispatch_all(self, frames: list[Frame]) -> None:
        for index, frame in enumerate(frames):
            if index and index % DISPATCH_BATCH == 0:
                # Let the requests started so far run before more frames of a pipelined
                # burst are dispatched: it is then served as it arrives, not piled up as tasks.
                await anyio.lowlevel.checkpoint()
            await self._dispatch_frame(frame)

    # --- dispatch ---------------------------------------------------------------------------

    async def _dispatch_frame(self, frame: Frame) -> None:
        if not isinstance(frame, Line):
            err = invalid_request(
                f"message of {frame.size} bytes exceeds the line limit of "
                f"{self._decoder.max_line_bytes} bytes"
            )
            await self.send(jsonrpc.error(jsonrpc.sniff_id(frame.head), err))
            return
        batch = self.batches(frame.data) if self.batches is not None else None
        for message in batch if batch is not None else [jsonrpc.parse_line(frame.data)]:
            if isinstance(message, jsonrpc.Request):
                await self._start_request(message)
            elif isinstance(message, jsonrpc.Notification):
                await self._handle_notification(message)
            elif isinstance(message, jsonrpc.Response):
                self._resolve(message)
            elif isinstance(message, jsonrpc.Invalid):
                await self.send(jsonrpc.error(message.id, message.error))
            else:
                log.info("ignoring a message from the editor: %s", message.reason)

    async def _start_request(self, req: jsonrpc.Request) -> None:
        if req.id in self._incoming:
            err = invalid_request("a request with this id is still in progress")
            await self.send(jsonrpc.error(req.id, err))
            return
        if not self.initialized and req.method != "initialize":
            err = invalid_request("not initialized: send initialize first")
            await self.send(jsonrpc.error(req.id, err))
            return
        if self._active >= self.max_in_flight and not await self._wait_for_slot():
            err = invalid_request(
                f"too many requests in progress (limit {self.max_in_flight}); "
                "wait for answers before sending more"
            )
            await self.send(jsonrpc.error(req.id, err))
            return
        self._active += 1
        if req.method == "initialize":
            # Answered before the next frame is read, so a request that follows it on the
            # wire never sees an uninitialised connection.
            await self._run_request(req)
            return
        task = self._loop.create_task(self._run_request(req))
        self._incoming[req.id] = task
        self._request_tasks.add(task)
        task.add_done_callback(self._request_ended)

    async def _wait_for_slot(self) -> bool:
        """At the limit: wait for a slot, reading nothing meanwhile. False when waiting cannot
        help (see the module docstring): the request is then refused, and reading goes on."""
        waited = 0.0
        while True:
            with anyio.move_on_after(self.slot_wait):
                while self._active >= self.max_in_flight:
                    await self._slot_freed.wait()
            if self._active < self.max_in_flight:
                return True
            # Counted in windows, not from a start time: a process that was not scheduled
            # for a while (a loaded machine) loses no more than one window to it.
            waited += self.slot_wait
            if self._pending or self.outbox.failed or waited >= self.stall_wait:
                return False

    def _request_ended(self, task: asyncio.Task[None]) -> None:
        self._request_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # _answer turns every handler error into an answer: this is a bug of ours.
            log.error("a request task failed", exc_info=task.exception())

    async def _run_request(self, req: jsonrpc.Request) -> None:
        then: Callable[[], Awaitable[None]] | None = None
        try:
            answer = await self._answer(req)
            if self.closed.is_set():
                return
            if isinstance(answer, RpcError):
                await self.send(jsonrpc.error(req.id, answer))
                return
            data, follow_up = answer
            await self.outbox.put(data)
            if len(self._request_tasks) <= 1 and self.outbox.flush_due:
                # The only request in flight: nothing else can join this batch, so write it
                # now rather than one loop step later (a strict request-answer exchange
                # waits on exactly this).
                self.outbox.flush()
            if follow_up is not None:
                assert self._task_group is not None
                self._task_group.start_soon(self._run_background, follow_up, req.method)
                then = follow_up  # the follow-up now owns the in-flight slot
        finally:
            if then is None:
                self._release_slot()

    async def _answer(
        self, req: jsonrpc.Request
    ) -> RpcError | tuple[bytes, Callable[[], Awaitable[None]] | None]:
        """Run the handler inside the error boundary. Returns the encoded response (encoded
        here, so that a result that cannot be serialised is an error answer, not a dead
        task) and the follow-up, or the error to answer with."""
        try:
            if self.on_request is None:
                raise internal_error("no request handler")
            outcome = await self.on_request(req.method, req.params)
            reply = outcome if isinstance(outcome, Reply) else Reply(outcome)
            return encode(jsonrpc.result(req.id, reply.result)), reply.then
        except asyncio.CancelledError:
            if req.id not in self._cancel_asked or self.closed.is_set():
                raise  # shutdown: nobody to answer
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # the cancel was ours to take, and it is answered
            return RpcError(ErrorCode.REQUEST_CANCELLED, "request cancelled")
        except Exception as exc:  # nothing a handler raises ends the process
            return to_rpc_error(exc)
        finally:
            # From here on a `$/cancel_request` for this id is too late and is ignored.
            self._incoming.pop(req.id, None)
            self._cancel_asked.discard(req.id)

    async def _run_background(
        self, job: Callable[[], Awaitable[None]], follow_up_of: str | None = None
    ) -> None:
        """Run a background job, or the follow-up of a request (which owns its slot)."""
        try:
            await job()
        except Exception:
            log.exception("%s failed", f"follow-up of {follow_up_of}" if follow_up_of else "job")
        finally:
            if follow_up_of is not None:
                self._release_slot()

    def _release_slot(self) -> None:
        self._active -= 1
        if self._active + 1 >= self.max_in_flight:
            # Only a full house has a reader waiting for a slot; below it, skip the event.
            self._slot_freed.set()
            self._slot_freed = anyio.Event()

    async def _handle_notification(self, note: jsonrpc.Notification) -> None:
        if note.method == "$/cancel_request":
            request_id = note.params.get("requestId") if isinstance(note.params, dict) else None
            # _valid_id: `true` must not cancel request 1 (True == 1 as a dict key).
            if jsonrpc.valid_id(request_id):
                task = self._incoming.get(request_id)
                if task is not None and request_id not in self._cancel_asked:
                    self._cancel_asked.add(request_id)
                    task.cancel()
            return
        if self.on_notification is None:
            return
        try:
            await self.on_notification(note.method, note.params)
        except Exception as exc:  # a notification has nobody to answer; log and go on
            log.warning("notification %s failed: %s", note.method[:80], to_rpc_error(exc).message)

    def _resolve(self, response: jsonrpc.Response) -> None:
        pending = self._pending.get(response.id) if isinstance(response.id, int) else None
        if pending is None or pending.done.is_set():
            # Nothing asked, or we stopped waiting (timeout, cancel): too late to matter.
            log.debug("ignoring a response to unknown request %r", response.id)
            return
        pending.result = response.result
        pending.error = response.error
        pending.done.set()

    def _fail_pending(self, reason: str) -> None:
        for pending in self._pending.values():
            if not pending.done.is_set():
                pending.error = RpcError(ErrorCode.INTERNAL_ERROR, reason)
                pending.done.set()
