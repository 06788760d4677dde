"""The connection's outgoing side: one ordered, bounded queue of encoded messages.

The order in which handlers `put` is the order on the wire: an update sent before a response
is read before it. The queue is written at the end of the loop step that filled it (an update
and the response that follows it go out in one write, with no task switch); whatever the pipe
does not take at once is left to the writer task (`run_writer`), which waits for the editor
to read.

- It holds `OUTBOX_SIZE` messages. When it is full, `put` waits (backpressure): a peer that
  stops reading its stdout stops being read, and stalls only itself.
- Each sender (the task that calls `put`: one request's handler, so one session's turn)
  may hold at most `SHARE` of those messages. A session streaming thousands of updates to
  an editor that reads slowly waits for its own messages to drain, while every other
  session's answers and updates still find room at once.
- After a write it lingers: for `linger` seconds (default 100 µs) it keeps the loop polling
  instead of letting it sleep, so an answer that comes straight back is read without a
  wake-up (30-60 µs on a virtual machine, more than a request itself costs). The price is at
  most that much CPU time per write, and none while idle.
- After a write error, or once closed, messages are dropped: senders never wait on a dead
  pipe or on an editor that is gone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

import anyio

from acpd.daemon.stdio import ByteSender

log = logging.getLogger("acpd.rpc")

OUTBOX_SIZE = 4096
SHARE = OUTBOX_SIZE // 16
"""Messages one sender may have queued (its fair share of the outbox). The queue is one
FIFO (order on the wire is order of `put`), so another session's answer waits behind at most
this many of a busy session's messages (~0.25 MB of cards), not a full queue."""
WRITE_BATCH = 512  # messages joined into one write
LINGER = 100e-6


class Outbox:
    def __init__(self, writer: ByteSender, on_write_error: Callable[[], None]) -> None:
        self._writer = writer
        self._on_write_error = on_write_error
        self._queue: deque[bytes] = deque()
        self._owners: deque[object] = deque()
        """The sender of each queued message, in the same order."""
        self._held: dict[object, int] = {}
        """Messages queued per sender (only senders with at least one)."""
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self._flush_handle: asyncio.Handle | None = None
        """The flush queued for the end of this loop step, if any."""
        self._unwritten: bytes | None = None
        """Bytes the pipe did not take at once; the writer task owns them until written."""
        self._writer_wanted = anyio.Event()
        self._room: anyio.Event | None = None
        """Set when a full queue has room again (exists only while a sender waits)."""
        self.closed = False
        self.failed = False
        """A write failed: the editor cannot read what we send."""
        self.linger = LINGER
        """Seconds to keep polling after a write (0: sleep at once)."""
        self._linger_until = 0.0
        self.lingering = False

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        # Looked up once: on Python 3.11 each get_running_loop() is a getpid() system call.
        if self._event_loop is None:
            self._event_loop = asyncio.get_running_loop()
        return self._event_loop

    async def put(self, data: bytes) -> None:
        """Queue one encoded message; waits while the queue is full or this sender holds
        its whole share of it."""
        owner: object = asyncio.current_task()
        held = self._held
        while (len(self._queue) >= OUTBOX_SIZE or held.get(owner, 0) >= SHARE) and (
            not self.closed
        ):
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()
        if self.closed or self.failed:
            log.debug("dropping a message: the connection to the editor is closed")
            return
        # No checkpoint: a handler that sends an update and then returns queues both before
        # the flush runs, and they go out in one write.
        self._queue.append(data)
        self._owners.append(owner)
        held[owner] = held.get(owner, 0) + 1
        if self._flush_handle is None:
            self._flush_handle = self._loop.call_soon(self.flush)

    @property
    def flush_due(self) -> bool:
        return self._flush_handle is not None

    def flush(self) -> None:
        """Write the queue without waiting; hand what the pipe does not take to the writer.
        Runs as the queued end-of-step callback, or directly by a caller that knows nothing
        else will join the batch."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()  # when called directly, not as the queued callback
            self._flush_handle = None
        if self._unwritten is not None or not self._queue:
            return  # the writer task is busy and takes the queue when it is done
        data = self._take_batch()
        try:
            written = self._writer.send_nowait(data)
        except OSError as exc:
            self._write_error(exc)
            return
        self._linger()
        if written < len(data):
            self._unwritten = data[written:]
            self._writer_wanted.set()
        elif self._queue:  # a batch limit was hit
            self._flush_handle = self._loop.call_soon(self.flush)

    def close(self) -> None:
        """Take no more messages; the writer delivers what is queued and returns."""
        self.closed = True
        if self._room is not None:
            self._room.set()
        self._writer_wanted.set()

    async def run_writer(self) -> None:
        """Finish the writes the pipe did not take at once, waiting for the editor to read;
        after close(), deliver what is still queued and return."""
        while True:
            await self._writer_wanted.wait()
            self._writer_wanted = anyio.Event()
            if self._unwritten is None and self._queue and not self.failed:
                self._unwritten = self._take_batch()  # closing: take the rest
            while self._unwritten is not None:
                try:
                    await self._writer.send(self._unwritten)
                except OSError as exc:
                    self._write_error(exc)
                    break
                self._unwritten = None
                self._linger()
                if self._queue:
                    self._unwritten = self._take_batch()
            if self.closed:
                return

    def _take_batch(self) -> bytes:
        queue = self._queue
        count = min(len(queue), WRITE_BATCH)
        data = queue.popleft() if count == 1 else b"".join(
            [queue.popleft() for _ in range(count)]
        )
        self._release(count)
        if self._room is not None:
            # Room in the queue or in a sender's share: the waiters check which.
            self._room.set()
            self._room = None
        return data

    def _release(self, count: int) -> None:
        owners, held = self._owners, self._held
        for _ in range(count):
            owner = owners.popleft()
            left = held[owner] - 1
            if left:
                held[owner] = left
            else:
                del held[owner]

    def _write_error(self, exc: OSError) -> None:
        log.error("cannot write to the editor, dropping output: %s", exc)
        self.failed = True
        self._unwritten = None
        self._queue.clear()
        self._owners.clear()
        self._held.clear()
        if self._room is not None:
            self._room.set()
            self._room = None
        self._on_write_error()

    def _linger(self) -> None:
        """Keep the loop polling for `linger` seconds: while a callback is queued the loop
        polls its descriptors without sleeping (with asyncio and uvloop alike)."""
        if self.linger <= 0:
            return
        self._linger_until = time.perf_counter() + self.linger
        if not self.lingering:
            self.lingering = True
            self._loop.call_soon(self._keep_polling)

    def _keep_polling(self) -> None:
        if time.perf_counter() < self._linger_until and not self.closed:
            self._loop.call_soon(self._keep_polling)
        else:
            self.lingering = False
