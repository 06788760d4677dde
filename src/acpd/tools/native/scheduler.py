"""scheduler: deferred and periodic tasks, kept in SQLite, surfaced as agent messages.

`{"action": "schedule", "message": ..., "delay_seconds": N}` is due once, N seconds from now;
with `"every_seconds": P` it is due every P seconds (first after `delay_seconds`, or after P).
`list` shows the session's pending tasks, `cancel` removes one by `task_id`.

When a task is due its message is shown to the user as an agent message of the session that
scheduled it:
  - at once, while that session is running a prompt in this daemon (a background task sleeps
    until the earliest due time, woken early when a task is added or removed: nothing polls);
  - otherwise at the start of the session's next prompt, or when it is loaded. ACP has no turn
    the agent can start: an agent message between turns would belong to no prompt (editors
    file it under the last one, and "every update of a turn precedes its response" breaks).
A periodic task that missed several periods is surfaced once and rescheduled after now.
A task is claimed with a compare-and-set on its due time, so two daemons sharing a data dir
never both surface one due time.

Bounds (`[tools.native.scheduler]`): at most `max_tasks` pending a session, a delay of 1 s to
`max_delay_secs`, a period of `min_period_secs` to `max_delay_secs`, a message up to
`max_message_chars`. Tasks are deleted with their last delivery (or cancel).
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.native.config import SchedulerConfig
from acpd.tools.native.db import DbTimeout, immediate, run_db
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

log = logging.getLogger("acpd.tools.scheduler")

TASKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    message TEXT NOT NULL,
    due_at REAL NOT NULL,
    period REAL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_due ON tasks (due_at);
CREATE INDEX IF NOT EXISTS tasks_by_session ON tasks (session_id, due_at);
"""
T = TypeVar("T")
BUDGET = 5.0
MAX_SLEEP = 3600.0
"""The longest the background task sleeps without looking (a clock jump, another daemon)."""


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    session_id: str
    message: str
    due_at: float
    period: float | None


DUE_BATCH = 500
"""The most due tasks one `due()` returns."""


class TaskStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Raises ToolError when the database cannot be used or is too slow."""
        try:
            return await run_db(self.path, TASKS_SCHEMA, BUDGET, work)
        except DbTimeout:
            raise ToolError(ErrorCategory.TIMEOUT,
                            f"the task store did not answer within {BUDGET:g} s") from None
        except (sqlite3.Error, OSError) as exc:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            f"the task store cannot be used: {exc}") from None

    async def add(self, task: Task, max_tasks: int) -> None:
        def work(db: sqlite3.Connection) -> None:
            with immediate(db):
                count = db.execute("SELECT count(*) FROM tasks WHERE session_id = ?",
                                   (task.session_id,)).fetchone()[0]
                if count >= max_tasks:
                    raise ToolError(
                        ErrorCategory.POLICY_BLOCKED,
                        f"this session already has {count} pending tasks (the most is "
                        f"{max_tasks}: [tools.native.scheduler] max_tasks)",
                        suggestion="Cancel a task you no longer need first.",
                    )
                db.execute("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?)", (
                    task.id, task.session_id, task.message, task.due_at, task.period,
                    time.time(),
                ))

        await self._run(work)

    async def pending(self, session_id: str) -> list[Task]:
        def work(db: sqlite3.Connection) -> list[Task]:
            rows = db.execute(
                "SELECT id, session_id, message, due_at, period FROM tasks "
                "WHERE session_id = ? ORDER BY due_at, id", (session_id,),
            ).fetchall()
            return [Task(*row) for row in rows]

        return await self._run(work)

    async def cancel(self, session_id: str, task_id: str) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            # Both ids: another session's task answers like one that does not exist.
            cursor = db.execute("DELETE FROM tasks WHERE id = ? AND session_id = ?",
                                (task_id, session_id))
            return cursor.rowcount > 0

        return await self._run(work)

    async def forget(self, session_id: str) -> None:
        """Every task of a deleted session."""
        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM tasks WHERE session_id = ?", (session_id,))

        await self._run(work)

    async def due(self, now: float, session_id: str | None = None) -> list[Task]:
        def work(db: sqlite3.Connection) -> list[Task]:
            where, args = "due_at <= ?", list[object]([now])
            if session_id is not None:
                where, args = where + " AND session_id = ?", [now, session_id]
            rows = db.execute(
                f"SELECT id, session_id, message, due_at, period FROM tasks WHERE {where} "
                f"ORDER BY due_at, id LIMIT {DUE_BATCH}", args,
            ).fetchall()
            return [Task(*row) for row in rows]

        return await self._run(work)

    async def next_due(self, skip: frozenset[str]) -> float | None:
        """The earliest due time of a task not in `skip` (tasks waiting for their session)."""
        def work(db: sqlite3.Connection) -> float | None:
            for task_id, due_at in db.execute("SELECT id, due_at FROM tasks ORDER BY due_at"):
                if task_id not in skip:
                    return float(due_at)
            return None

        return await self._run(work)

    async def claim(self, task: Task, now: float) -> bool:
        """Take `task`'s current due time for delivery: a one-off task is deleted, a periodic
        one moved to its next due time after `now`. False when someone else took it first."""
        def work(db: sqlite3.Connection) -> bool:
            if task.period is None:
                sql, args = "DELETE FROM tasks WHERE id = ? AND due_at = ?", (task.id, task.due_at)
                return db.execute(sql, args).rowcount > 0
            missed = int((now - task.due_at) // task.period) + 1
            following = task.due_at + missed * task.period
            return db.execute(
                "UPDATE tasks SET due_at = ? WHERE id = ? AND due_at = ?",
                (following, task.id, task.due_at),
            ).rowcount > 0

        return await self._run(work)


# --- the tool ------------------------------------------------------------------------------


class SchedulerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["schedule", "list", "cancel"] = Field(
        description="schedule a task, list this session's tasks, or cancel one"
    )
    message: str | None = Field(
        None, min_length=1, max_length=20_000,
        description="schedule: what to tell the user (and you) when the task is due",
    )
    delay_seconds: float | None = Field(
        None, ge=1, allow_inf_nan=False,
        description="schedule: seconds from now until it is (first) due",
    )
    every_seconds: float | None = Field(
        None, gt=0, allow_inf_nan=False,
        description="schedule: repeat every this many seconds (omit for a one-off task)",
    )
    task_id: str | None = Field(
        None, min_length=1, max_length=64, description="cancel: the task to cancel"
    )


def check_schedule(
    args: SchedulerParams, limits: SchedulerConfig
) -> tuple[str, float, float | None]:
    """(message, delay, period) of a valid schedule request. Raises ToolError saying which
    argument is wrong and what the bound is."""
    def bad(message: str) -> ToolError:
        return ToolError(ErrorCategory.INVALID_PARAMETERS, message)

    if args.task_id is not None:
        raise bad("task_id: only for cancel")
    if args.message is None or not args.message.strip():
        raise bad("message: required to schedule a task")
    if len(args.message) > limits.max_message_chars:
        raise bad(f"message: longer than {limits.max_message_chars} characters")
    if args.delay_seconds is None and args.every_seconds is None:
        raise bad("give delay_seconds (a one-off task), every_seconds (a periodic one), or both")
    period = args.every_seconds
    if period is not None and not limits.min_period_secs <= period <= limits.max_delay_secs:
        raise bad(f"every_seconds: must be between {limits.min_period_secs:g} and "
                  f"{limits.max_delay_secs:g}")
    delay = args.delay_seconds if args.delay_seconds is not None else period
    assert delay is not None
    if delay > limits.max_delay_secs:
        raise bad(f"delay_seconds: at most {limits.max_delay_secs:g} (a task may be due at "
                  "most that far ahead)")
    return args.message, delay, period


def describe_task(task: Task, now: float) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(task.due_at))
    left = max(0.0, task.due_at - now)
    every = f", every {task.period:g} s" if task.period is not None else ""
    return f"{task.id}: due {when} (in {left:.0f} s{every}): {task.message[:200]}"


def make_scheduler_spec(
    store: TaskStore | None, limits: SchedulerConfig, changed: Callable[[], None]
) -> ToolSpec:
    """The scheduler tool over `store` (None: no data dir); `changed` wakes the delivery."""

    async def scheduler(args: SchedulerParams, ctx: ToolContext) -> ToolOutput:
        if store is None:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            "the scheduler needs a data directory, and acpd runs without one")
        now = time.time()
        if args.action == "list":
            tasks = await store.pending(ctx.session_id)
            lines = [describe_task(t, now) for t in tasks] or ["no pending tasks"]
            return ToolOutput("\n".join(lines), raw={"count": len(tasks)})
        if args.action == "cancel":
            if args.task_id is None:
                raise ToolError(ErrorCategory.INVALID_PARAMETERS, "task_id: required to cancel")
            if not await store.cancel(ctx.session_id, args.task_id):
                raise ToolError(ErrorCategory.INVALID_PARAMETERS,
                                f"no pending task {args.task_id[:64]!r} in this session")
            changed()
            return ToolOutput(f"cancelled {args.task_id}", raw={"cancelled": args.task_id})
        message, delay, period = check_schedule(args, limits)
        if not ctx.session_id or ctx.session_id == "cli":
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            "a task is surfaced in an editor session; this call has none")
        task = Task(f"task_{secrets.token_hex(6)}", ctx.session_id, message, now + delay, period)
        await store.add(task, limits.max_tasks)
        changed()
        return ToolOutput(f"scheduled {describe_task(task, now)}",
                          raw={"id": task.id, "due_at": task.due_at, "period": period})

    return ToolSpec(
        id="core__scheduler", name="scheduler",
        description="Schedule a reminder for later in this session (once after a delay, or "
        "every N seconds), list the pending ones, or cancel one. When due, its message is "
        "shown to the user as your message.",
        params=SchedulerParams, effect=Effect.STATE_CHANGE, kind="other", execute=scheduler,
        workspace_files=False,
        title=lambda a: f"Scheduler: {a.action}",
        redaction=redaction(("action", "delay_seconds", "every_seconds", "task_id"),
                            ("id", "due_at", "period", "count", "cancelled")),
    )
