"""Surfacing due scheduler tasks (see scheduler.py for the rules).

One background task per daemon sleeps until the earliest due time of a task it has not set
aside, or until a task is added or cancelled (`changed()`), or at most MAX_SLEEP. Due tasks of
a session that is running a prompt are said at once; the others are set aside ("parked") until
that session's next prompt or load calls `surface()`. Nothing polls.
"""

from __future__ import annotations

import logging
import time

import anyio

from acpd.tools.errors import ToolError
from acpd.tools.native.live import LiveSession, LiveSessions
from acpd.tools.native.scheduler import DUE_BATCH, MAX_SLEEP, Task, TaskStore

log = logging.getLogger("acpd.tools.scheduler")

RETRY_AFTER = 30.0
"""After the task store failed, the next look (the daemon goes on without it meanwhile)."""


def due_text(task: Task) -> str:
    every = f" (it repeats every {task.period:g} s)" if task.period is not None else ""
    return f"\n[acpd] Scheduled task {task.id} is due{every}: {task.message}\n\n"


class Delivery:
    def __init__(self, store: TaskStore, live: LiveSessions) -> None:
        self.store = store
        self.live = live
        self.parked: set[str] = set()
        """Due tasks whose session is not running a prompt: they wait for it (as of the last
        look at the due tasks)."""
        self.unsaid: dict[str, list[Task]] = {}
        """Claimed while their session's prompt ended (its answer may be out: an update now
        would follow it, which ACP forbids): said at that session's next surface()."""
        self._wake: anyio.Event | None = None

    def changed(self) -> None:
        """A task was added or removed: look at the due times again."""
        if self._wake is not None:
            self._wake.set()

    def forget(self, session_id: str) -> None:
        """The session was deleted: nothing is kept to be said to it."""
        self.unsaid.pop(session_id, None)
        self.changed()

    async def run(self, stop: anyio.Event) -> None:
        """Until `stop` is set: sleep to the next due time, surface what is due."""
        async with anyio.create_task_group() as group:

            async def stop_all() -> None:
                await stop.wait()
                group.cancel_scope.cancel()

            group.start_soon(stop_all)
            while True:
                self._wake = wake = anyio.Event()  # before the query: no change is missed
                try:
                    upcoming = await self.store.next_due(frozenset(self.parked))
                except Exception as exc:  # the loop outlives a bad disk: it looks again later
                    log.warning("scheduler: %s", getattr(exc, "message", exc))
                    upcoming = time.time() + RETRY_AFTER
                delay = MAX_SLEEP if upcoming is None else upcoming - time.time()
                with anyio.move_on_after(min(MAX_SLEEP, max(0.0, delay))):
                    await wake.wait()
                await self.deliver_due()

    async def deliver_due(self) -> None:
        """Say every due task whose session is in a prompt now; park the others."""
        now = time.time()
        try:
            due = await self.store.due(now)
        except Exception as exc:
            log.warning("scheduler: %s", getattr(exc, "message", exc))
            return
        parked: set[str] = set()
        for task in due:
            session = self.live.get(task.session_id)
            if session is None or not session.in_turn():
                parked.add(task.id)
                continue
            await self._deliver(task, session, now, during_turn=True)
        # Built afresh from what is due now: a parked task that was cancelled, deleted with
        # its session or claimed by another daemon is no longer due, and is not kept (the
        # set only grew before). A full batch may not show every parked task: keep those.
        self.parked = parked if len(due) < DUE_BATCH else self.parked | parked

    async def surface(self, session: LiveSession) -> int:
        """Say the session's due tasks (its prompt is starting, or it was loaded); how many."""
        said = 0
        for task in self.unsaid.pop(session.id, []):
            said += await self._say(task, session)
        now = time.time()
        try:
            due = await self.store.due(now, session.id)
        except ToolError as exc:
            log.warning("scheduler: %s", exc.message)
            return said
        for task in due:
            said += await self._deliver(task, session, now)
        if due:
            self.changed()  # a periodic task has a new due time
        return said

    async def _deliver(
        self, task: Task, session: LiveSession, now: float, *, during_turn: bool = False
    ) -> int:
        self.parked.discard(task.id)
        try:
            if not await self.store.claim(task, now):
                return 0  # another daemon (or the other path here) took this due time
        except ToolError as exc:
            log.warning("scheduler: %s", exc.message)
            return 0
        # Checked again after the claim's wait, with no wait between this and the send: the
        # prompt may have ended meanwhile.
        if during_turn and not session.in_turn():
            self.unsaid.setdefault(session.id, []).append(task)
            return 0
        return await self._say(task, session)

    async def _say(self, task: Task, session: LiveSession) -> int:
        try:
            await session.say(due_text(task))
        except Exception as exc:  # the editor went away: the task is spent all the same
            log.warning("scheduler: could not show task %s: %s", task.id, exc)
            return 0
        return 1
