"""The scheduler's store and bounds through the real pipeline and SQLite; delivery rules."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from acpd.providers.base import Message, Provider
from acpd.tools.native.delivery import Delivery
from acpd.tools.native.live import LiveSessions
from acpd.tools.native.scheduler import Task, TaskStore
from tests.native.conftest import RigFactory

pytestmark = pytest.mark.anyio


class Said:
    """A live session as the daemon lends it, minus the editor: what was said is kept."""

    def __init__(self, session_id: str, in_turn: bool) -> None:
        self.id = session_id
        self.history: list[Message] = []
        self.turn = in_turn
        self.messages: list[str] = []
        self.heard: anyio.Event | None = None

    def provider(self) -> Provider | None:
        return None

    def in_turn(self) -> bool:
        return self.turn

    def closed(self) -> bool:
        return False

    async def say(self, text: str) -> None:
        self.messages.append(text)
        if self.heard is not None:
            self.heard.set()

    def drop_oldest(self, count: int) -> None:
        del self.history[:count]


async def test_schedule_list_cancel_and_the_per_session_bound(rig: RigFactory) -> None:
    r = rig({"native": {"scheduler": {"max_tasks": 2}}})
    one = await r.run("scheduler", {"action": "schedule", "message": "a", "delay_seconds": 60})
    assert one.error is None, one.text
    task_id = one.text.split()[1].rstrip(":")
    assert task_id.startswith("task_")
    await r.run("scheduler", {"action": "schedule", "message": "b", "every_seconds": 120})
    third = await r.run("scheduler", {"action": "schedule", "message": "c", "delay_seconds": 5})
    assert third.error is not None and "max_tasks" in third.text
    listed = await r.run("scheduler", {"action": "list"})
    assert task_id in listed.text and "every 120 s" in listed.text
    other = rig(session_id="sess-other")
    stolen = await other.run("scheduler", {"action": "cancel", "task_id": task_id})
    assert stolen.error is not None and "no pending task" in stolen.text
    assert "no pending tasks" in (await other.run("scheduler", {"action": "list"})).text
    cancelled = await r.run("scheduler", {"action": "cancel", "task_id": task_id})
    assert cancelled.error is None and task_id not in (
        await r.run("scheduler", {"action": "list"})).text


@pytest.mark.parametrize(("args", "fault"), [
    ({"message": "m"}, "give delay_seconds"),
    ({"delay_seconds": 5}, "message: required"),
    ({"message": "  ", "delay_seconds": 5}, "message: required"),
    ({"message": "m", "delay_seconds": 0.5}, "greater than or equal to 1"),
    ({"message": "m", "delay_seconds": 10**12}, "delay_seconds: at most"),
    ({"message": "m", "every_seconds": 1}, "every_seconds: must be between 60"),
    ({"message": "m", "every_seconds": 10**12}, "every_seconds: must be between"),
    ({"message": "m", "every_seconds": -1}, "greater than 0"),
    ({"message": "m", "delay_seconds": 5, "task_id": "t"}, "only for cancel"),
    ({"message": "m" * 2001, "delay_seconds": 5}, "longer than 2000"),
    ({"message": "m", "delay_seconds": "soon"}, "valid number"),
])
async def test_bounds_are_enforced_with_a_clear_reason(
    rig: RigFactory, args: dict[str, object], fault: str
) -> None:
    result = await rig().run("scheduler", {"action": "schedule", **args})
    assert result.error is not None and fault in result.text, result.text


async def test_the_cli_session_cannot_schedule(rig: RigFactory) -> None:
    result = await rig(session_id="cli").run(
        "scheduler", {"action": "schedule", "message": "m", "delay_seconds": 5})
    assert result.error is not None and "editor session" in result.text


async def test_a_due_time_is_claimed_once_and_a_late_period_skips_ahead(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "native.sqlite3")
    now = time.time()
    once = Task("task_once", "s", "m", now - 1, None)
    every = Task("task_every", "s", "m", now - 35, 10.0)
    await store.add(once, 10)
    await store.add(every, 10)
    assert [t.id for t in await store.due(now)] == ["task_every", "task_once"]
    assert await store.claim(once, now) and not await store.claim(once, now)
    assert await store.claim(every, now) and not await store.claim(every, now)
    (moved,) = await store.pending("s")
    assert now < moved.due_at <= now + 10  # three periods missed: said once, next after now
    assert await store.next_due(frozenset()) == moved.due_at
    assert await store.next_due(frozenset({"task_every"})) is None


async def test_due_tasks_are_said_in_a_turn_and_parked_otherwise(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "native.sqlite3")
    live = LiveSessions()
    busy, idle = Said("busy", True), Said("idle", False)
    live.add(busy)
    live.add(idle)
    now = time.time()
    for task in (Task("t1", "busy", "for busy", now, None), Task("t2", "idle", "for idle", now,
                 None), Task("t3", "gone", "nobody", now, None)):
        await store.add(task, 10)
    delivery = Delivery(store, live)
    await delivery.deliver_due()
    assert busy.messages and "for busy" in busy.messages[0]
    assert idle.messages == [] and delivery.parked == {"t2", "t3"}
    assert await delivery.surface(idle) == 1 and "for idle" in idle.messages[0]
    assert await delivery.surface(idle) == 0
    assert [t.id for t in await store.due(time.time())] == ["t3"]


async def test_the_background_task_sleeps_until_due_and_stops(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "native.sqlite3")
    live = LiveSessions()
    busy = Said("busy", True)
    busy.heard = anyio.Event()
    live.add(busy)
    delivery = Delivery(store, live)
    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(delivery.run, stop)
        await anyio.sleep(0.1)
        await store.add(Task("t1", "busy", "wake up", time.time() + 0.3, None), 10)
        delivery.changed()
        with anyio.fail_after(30):
            await busy.heard.wait()
        stop.set()
    assert "wake up" in busy.messages[0]


class EndsWhileClaiming(TaskStore):
    """The real store, with the one moment that matters made certain: the session's prompt
    ends while a due task's claim is being written (it is answered meanwhile)."""

    session: Said

    async def claim(self, task: Task, now: float) -> bool:
        taken = await super().claim(task, now)
        self.session.turn = False
        return taken


async def test_a_task_claimed_as_its_prompt_ends_waits_for_the_next_prompt(
    tmp_path: Path,
) -> None:
    # ACP: nothing of a turn may follow its prompt's answer. A message said now would.
    store = EndsWhileClaiming(tmp_path / "native.sqlite3")
    live = LiveSessions()
    session = store.session = Said("s", True)
    live.add(session)
    await store.add(Task("t1", "s", "stand up", time.time(), None), 10)
    delivery = Delivery(store, live)
    await delivery.deliver_due()
    assert session.messages == []
    session.turn = True  # the next prompt starts
    assert await delivery.surface(session) == 1 and "stand up" in session.messages[0]
    assert await delivery.surface(session) == 0  # said once
    await store.add(Task("t2", "s", "gone with it", time.time(), None), 10)
    session.turn = True
    await delivery.deliver_due()  # claimed as the prompt ends again: kept to be said...
    assert "s" in delivery.unsaid
    delivery.forget("s")  # ...until the session is deleted
    assert delivery.unsaid == {}
