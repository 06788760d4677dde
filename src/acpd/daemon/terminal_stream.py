"""Live output of the commands acpd runs itself, pushed to the editor as the process writes.

The local runner's pipe readers hand every read to `LiveTerminal.feed` (synchronous, never
waits); one sender task per command (`LiveTerminal.run`) turns the bytes into updates for
the client (terminal_wire.py renders them per client: v2 display terminal, v1 `_meta`
convention, or the card's text):

- Coalescing: after the first byte the sender waits COALESCE seconds (or until CHUNK_BYTES
  are pending) so that a burst of small writes becomes one update; plain cards, which resend
  their whole live tail each time, wait PLAIN_INTERVAL.
- Redaction: every byte passes the output stage's secret scanner through StreamRedactor
  (line at a time, context kept, a token never split). A line still being written is shown
  after IDLE_FLUSH without new bytes, up to its trailing word.
- Back-pressure: the sender awaits the connection's outbox, which makes a sender wait for
  its own share only (daemon/outbox.py), so a flooding command stalls only itself. Bytes
  pile up in a buffer of at most PENDING_LIMIT; past that they are dropped, and the client
  gets a snapshot instead (v2: a replacement `terminal_update` of the bounded tail; meta and
  plain: a note saying how much was skipped, then the tail). Memory stays bounded.
- Caps: a command's stream carries at most its output byte limit (`outputByteLimit`, the
  `[tools.shell] output_byte_limit`). Past it, nothing more is scanned byte by byte: v2 gets
  a replacement snapshot of the bounded tail every CAPPED_INTERVAL, a plain card its tail
  every PLAIN_BIG_INTERVAL (the old polling's shape, for a flood only); meta gets a note,
  then the tail once the command ends.
- The end: `close` releases what is held, reports the exit (meta, v2) and stores one bounded
  snapshot for `session/load` (terminal_wire.replay). The tool result itself never depends
  on any of this: the runner keeps its own buffer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from acpd.daemon.stream_redact import StreamRedactor, to_bytes, to_text
from acpd.daemon.tail_buffer import OutputSoFar, snapshot_tail
from acpd.daemon.terminal_wire import (
    Exit,
    Mode,
    Snapshot,
    meta_exit,
    meta_info,
    meta_output,
    mode_for,
    v2_chunk,
    v2_exit,
    v2_snapshot,
    v2_started,
)
from acpd.daemon.updates import redact_text
from acpd.tools.output import OutputStage, live_view
from acpd.tools.secrets import hold_point
from acpd.tools.spec import ToolCallView

if TYPE_CHECKING:
    from acpd.daemon.handshake import ClientCaps
    from acpd.daemon.session import Session

log = logging.getLogger("acpd.terminal")

COALESCE = 0.002
"""Seconds the sender waits after the first new byte for more to join it."""
PLAIN_INTERVAL = 0.03
"""The same for plain cards: each of their updates carries the whole live tail..."""
PLAIN_BIG_INTERVAL = 0.25
"""...and once that tail is PLAIN_BIG bytes or more, this (a flood is not resent 30 times a
second)."""
PLAIN_BIG = 4096
IDLE_FLUSH = 0.02
"""Seconds without new bytes after which a line still being written is shown."""
CHUNK_BYTES = 64 * 1024
"""The most bytes one update carries (more waits for the next)."""
PENDING_LIMIT = 1 << 20
"""Bytes waiting for a slow client; beyond this they are dropped for a snapshot."""
SNAPSHOT_CHARS = 64 * 1024
"""The tail kept for a snapshot (replay, resynchronisation)."""
CAPPED_INTERVAL = 0.25
"""v2, past the output byte limit: how often the tail snapshot is replaced."""
CLOSE_BUDGET = 2.0
"""Seconds the end of a stream may wait for the client before it is given up."""

Send = Callable[[dict[str, Any]], Awaitable[None]]
Store = Callable[[dict[str, Any]], None]


class TerminalStreams:
    """One session's live terminals: how they are shown (the client's `mode`), where their
    updates go, and which calls announced a `_meta` terminal on their first card."""

    def __init__(
        self, mode: Mode, send: Send, store: Store, stage: Callable[[], OutputStage],
        cwd: str, local: Callable[[], bool] = lambda: True,
    ) -> None:
        self.mode = mode
        self._send = send
        self._store = store
        self._stage = stage
        self._cwd = cwd
        self._local = local
        """Whether commands run here now (not in the editor's terminal)."""
        self._announced: set[str] = set()
        self._opened: dict[str, int] = {}

    def decorate(self, view: ToolCallView, update: dict[str, Any], *, first: bool) -> None:
        """Meta mode: the first card of a command that will run here announces its display
        terminal (Zed creates it only from a `tool_call`, never from an update)."""
        if not (first and self.mode == "meta" and _is_command(view) and self._local()):
            return
        update["_meta"] = {**update.get("_meta", {}), **meta_info(view.tool_call_id, self._cwd)}
        self._announced.add(view.tool_call_id)

    def open(
        self, call_id: str, command: str, cwd: str, output: OutputSoFar, limit: int
    ) -> LiveTerminal:
        mode = self.mode
        if mode == "meta" and call_id not in self._announced:
            mode = "plain"  # its card announced no terminal: show the text instead
        runs = self._opened[call_id] = self._opened.get(call_id, 0) + 1
        if mode == "v2":
            terminal_id = f"term_{call_id}" + (f"_{runs}" if runs > 1 else "")
        else:
            terminal_id = call_id
        # The command is shown (v2's terminal_update) and stored (the replay snapshot): a
        # credential in it is replaced as in every card (daemon/updates.py).
        return LiveTerminal(self, mode, call_id, terminal_id, redact_text(command), cwd, output,
                            limit)

    def redact(self, text: str) -> str:
        return self._stage().redact(text)[0]

    async def send(self, update: dict[str, Any]) -> None:
        await self._send(update)

    def store(self, record: dict[str, Any]) -> None:
        self._store(record)


def session_terminals(
    session: Session, caps: ClientCaps, stage: Callable[[], OutputStage]
) -> TerminalStreams:
    """The session's streams (made on its first prompt), for this connection's client."""
    if session.terminals is None:

        async def send(update: dict[str, Any]) -> None:
            await session.send(update)

        def store(record: dict[str, Any]) -> None:
            session.store.append_update(session.id, record)

        session.terminals = TerminalStreams(
            mode_for(caps.protocol_version, caps.raw), send, store, stage, session.cwd,
            local=lambda: not (caps.terminal and session.editor_terminal),
        )
    return session.terminals


def replay_mode(caps: ClientCaps) -> Mode:
    return mode_for(caps.protocol_version, caps.raw)


def _is_command(view: ToolCallView) -> bool:
    raw = view.raw_input
    return view.kind == "execute" and isinstance(raw, dict) and isinstance(
        raw.get("command"), str)


class LiveTerminal:
    """One command's stream. `feed` from the pipe readers, `run` as the sender task,
    `close` once the process is gone."""

    def __init__(
        self, streams: TerminalStreams, mode: Mode, call_id: str, terminal_id: str,
        command: str, cwd: str, output: OutputSoFar, limit: int,
    ) -> None:
        self.streams = streams
        self.mode = mode
        self.call_id = call_id
        self.terminal_id = terminal_id
        self.command = command
        self.cwd = cwd
        self._output = output
        self._limit = limit
        self._streamed = 0
        """Bytes given to the redactor so far."""
        self._over = 0
        """Bytes past the limit (capped: from then on bytes are only counted)."""
        self._over_shown = 0
        self._redactor = StreamRedactor(streams.redact)
        self._pending = bytearray()
        self._skipped = 0
        self._wake = anyio.Event()
        self._closing = False
        self._close_requested = anyio.Event()
        self._done = anyio.Event()
        self._failed = False
        self._tail = ""
        """Plain mode: the text shown so far (its last SNAPSHOT_CHARS)."""
        self._shown = ""
        """Plain mode: the live view last sent (an unchanged view is not sent again)."""
        self.on_text: Callable[[str], Awaitable[None]] | None = None
        """Plain mode: where the card's live text goes (the runner's on_output)."""

    @property
    def display(self) -> bool:
        """The client shows a terminal for it (the card embeds `terminal_id`)."""
        return self.mode != "plain"

    # --- the pipe readers' side ----------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """New bytes from the process. Never waits; drops (for a snapshot) rather than grow
        past PENDING_LIMIT."""
        if self._failed:
            return
        if self._over:
            self._over += len(data)
        elif len(self._pending) + len(data) > PENDING_LIMIT:
            self._skipped += len(self._pending) + len(data)
            self._pending.clear()
        else:
            self._pending += data
        self._wake.set()

    # --- the sender ------------------------------------------------------------------------

    async def run(self) -> None:
        """Send until `close`; returns once everything is out. Never raises: a stream that
        fails stops (and says so in the log), the command and its result go on."""
        try:
            if self.mode == "v2":
                await self.streams.send(v2_started(self.terminal_id, self.command, self.cwd))
            while not (self._closing and not self._pending and not self._skipped):
                await (self._capped_batch() if self._over else self._next_batch())
            if self._over:
                await self._capped_end()
            else:
                await self._send_text(self._redactor.finish())
        except Exception as exc:
            log.warning("terminal %s: live output stopped: %s", self.terminal_id, exc)
            self._failed = True
        finally:
            self._done.set()

    async def _next_batch(self) -> None:
        if not self._pending and not self._skipped and not self._closing:
            if self._redactor.holding:
                with anyio.move_on_after(IDLE_FLUSH):
                    await self._wake.wait()
                if not self._wake.is_set():
                    await self._send_text(self._redactor.flush_partial())
                    await self._wake.wait()
            else:
                await self._wake.wait()
        wait = COALESCE
        if self.mode == "plain":
            wait = PLAIN_INTERVAL if len(self._tail) < PLAIN_BIG else PLAIN_BIG_INTERVAL
        if not self._closing and len(self._pending) < CHUNK_BYTES:
            await anyio.sleep(wait)
        self._wake = anyio.Event()
        if self._skipped:
            await self._resync()
            return
        data = bytes(self._pending[:CHUNK_BYTES])
        del self._pending[:CHUNK_BYTES]
        if self._streamed + len(data) > self._limit:
            await self._cap(data)
            return
        if self._pending:
            self._wake.set()
        self._streamed += len(data)
        await self._send_text(self._redactor.feed(data))
        await anyio.lowlevel.checkpoint()  # a flood is drained in turns with everyone else

    async def _cap(self, data: bytes) -> None:
        """The limit is reached within `data`: send up to it, then only count."""
        keep = max(0, self._limit - self._streamed)
        self._over = len(data) - keep + len(self._pending) or 1
        self._pending.clear()
        self._streamed += keep
        await self._send_text(self._redactor.feed(data[:keep]))
        if self.mode == "meta":
            await self._send_text(
                f"\r\n[acpd: the output passed its limit ({self._limit} bytes): its last "
                "part is shown when the command ends]\r\n")

    async def _capped_batch(self) -> None:
        """Past the limit, the bounded tail now and then: v2 as a replacement snapshot, a
        plain card as its text (as it always is); a `_meta` terminal waits for the end."""
        if self.mode == "meta" or self._closing:
            if not self._closing:
                await self._wake.wait()
                self._wake = anyio.Event()
            return
        interval = CAPPED_INTERVAL if self.mode == "v2" else PLAIN_BIG_INTERVAL
        with anyio.move_on_after(interval):
            await self._close_requested.wait()
        if self._over != self._over_shown and not self._closing:
            self._over_shown = self._over
            await self._show_tail(hold=True)

    async def _show_tail(self, *, hold: bool) -> None:
        tail, _ = snapshot_tail(self._output, SNAPSHOT_CHARS)
        text = self.streams.redact(tail[: hold_point(tail)] if hold else tail)
        if self.mode == "v2":
            await self.streams.send(v2_snapshot(self.terminal_id, to_bytes(text), True))
        else:
            await self._show_view(live_view(to_text(text)))

    async def _capped_end(self) -> None:
        if self.mode != "meta":
            await self._show_tail(hold=False)
            return
        tail, _ = snapshot_tail(self._output, min(self._over, SNAPSHOT_CHARS))
        note = f"\r\n[acpd: {self._over} bytes past the limit; their last part:]\r\n"
        await self._send_text(note + self.streams.redact(tail))

    async def _send_text(self, text: str) -> None:
        if not text:
            return
        if self.mode == "v2":
            await self.streams.send(v2_chunk(self.terminal_id, to_bytes(text)))
        elif self.mode == "meta":
            await self.streams.send(meta_output(self.call_id, self.terminal_id, to_text(text)))
        else:
            self._tail = (self._tail + to_text(text))[-SNAPSHOT_CHARS:]
            await self._show_view(live_view(self._tail))

    async def _show_view(self, view: str) -> None:
        """Plain mode: the card's live text. Output that repeats itself (`yes`, a progress
        line redrawn) can leave the visible window as it was: nothing new, nothing sent."""
        if self.on_text is not None and view != self._shown:
            self._shown = view
            await self.on_text(view)

    async def _resync(self) -> None:
        """The client fell behind and bytes were dropped: start again from the runner's
        buffer (which has every byte), as a snapshot of its redacted tail."""
        skipped, self._skipped = self._skipped, 0
        self._pending.clear()
        self._redactor = StreamRedactor(self.streams.redact)
        text, truncated = self._snapshot_text()
        log.info("terminal %s: the client fell behind; %d bytes sent as a snapshot",
                 self.terminal_id, skipped)
        if self.mode == "v2":
            await self.streams.send(v2_snapshot(self.terminal_id, to_bytes(text), truncated))
            return
        note = f"\r\n[acpd: {skipped} bytes were not shown live: the editor fell behind]\r\n"
        if self.mode == "plain":
            self._tail = ""
        await self._send_text(note + text)

    def _snapshot_text(self) -> tuple[str, bool]:
        """The redacted tail of the whole output so far up to its last line end; the rest of
        the last line goes to the new redactor, which holds it until the line is complete."""
        tail, truncated = snapshot_tail(self._output, SNAPSHOT_CHARS)
        cut = tail.rfind("\n") + 1
        self._redactor.feed(to_bytes(tail[cut:]))
        return self.streams.redact(tail[:cut]), truncated

    # --- the end ---------------------------------------------------------------------------

    async def close(self, status: Exit) -> None:
        """Release what is held, report the exit, store the snapshot for replay. Waits for
        the client at most CLOSE_BUDGET seconds (then the rest is dropped: the final card
        still has the whole output)."""
        self._closing = True
        self._close_requested.set()
        self._wake.set()
        with anyio.move_on_after(CLOSE_BUDGET, shield=True):
            await self._done.wait()
            try:
                if self._failed:
                    pass
                elif self.mode == "meta":
                    await self.streams.send(meta_exit(self.call_id, self.terminal_id, status))
                elif self.mode == "v2":
                    await self.streams.send(v2_exit(self.terminal_id, status))
            except Exception as exc:
                log.warning("terminal %s: its exit was not shown: %s", self.terminal_id, exc)
        self.streams.store(self.snapshot(status).record())

    def snapshot(self, status: Exit) -> Snapshot:
        tail, truncated = snapshot_tail(self._output, SNAPSHOT_CHARS)
        data = to_bytes(self.streams.redact(tail))
        return Snapshot(self.call_id, self.terminal_id, self.command, self.cwd, data,
                        truncated, status)
