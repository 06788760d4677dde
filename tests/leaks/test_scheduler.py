"""The scheduler keeps nothing for tasks that are gone.

Due tasks of a session that is not in a prompt are parked (skipped by the wake-up query
until their session prompts). A parked task can go without being said: its session
deleted, the task cancelled, another daemon claiming it. Each round parks tasks and then
removes them one of those ways; after K rounds nothing may be left parked."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from acpd.tools.native.delivery import Delivery
from acpd.tools.native.live import LiveSessions
from acpd.tools.native.scheduler import Task, TaskStore

pytestmark = pytest.mark.anyio

ROUNDS = 5


async def test_parked_tasks_that_went_away_are_not_kept(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "native.sqlite3")
    delivery = Delivery(store, LiveSessions())  # no session is live: every due task parks
    for n in range(ROUNDS):
        now = time.time()
        deleted = Task(f"task_del{n}", f"sess_del{n}", "m", now - 1, None)
        cancelled = Task(f"task_can{n}", f"sess_can{n}", "m", now - 1, 60.0)
        claimed = Task(f"task_clm{n}", f"sess_clm{n}", "m", now - 1, None)
        for task in (deleted, cancelled, claimed):
            await store.add(task, 10)
        await delivery.deliver_due()
        assert {deleted.id, cancelled.id, claimed.id} <= delivery.parked
        await store.forget(deleted.session_id)  # session/delete
        delivery.forget(deleted.session_id)
        assert await store.cancel(cancelled.session_id, cancelled.id)  # the model cancels it
        assert await store.claim(claimed, time.time())  # another daemon said it
        await delivery.deliver_due()
    assert delivery.parked == set()
    assert await store.due(time.time()) == []
