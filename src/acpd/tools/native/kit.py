"""The native tools of one daemon (or one CLI run): their stores, the live sessions they
reach, and the hooks the daemon calls (daemon/native_hooks.py).

Storage, all under `<data dir>/native/`: `memory/<project>.sqlite3` (memory.py) and
`native.sqlite3` (scheduler tasks and Knowledge entries). Without a data dir the tools exist
but refuse, saying why.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import anyio

from acpd.tools.errors import ToolError
from acpd.tools.native.compress import Compressor, KnowledgeStore, make_compress_spec
from acpd.tools.native.config import NativeConfig
from acpd.tools.native.db import DbTimeout
from acpd.tools.native.delivery import Delivery
from acpd.tools.native.live import LiveSession, LiveSessions
from acpd.tools.native.memory import MemoryStore, make_memory_specs
from acpd.tools.native.scheduler import TaskStore, make_scheduler_spec
from acpd.tools.native.skills import SkillCatalog, make_skill_spec, skill_roots
from acpd.tools.registry import ToolSource

log = logging.getLogger("acpd.tools.native")

NATIVE_DB = "native.sqlite3"


class NativeTools:
    def __init__(
        self, settings: NativeConfig, data_dir: Path | None, user_config_dir: Path | None
    ) -> None:
        self.settings = settings
        self.live = LiveSessions()
        native_db = data_dir / "native" / NATIVE_DB if data_dir is not None else None
        self.memory = MemoryStore(data_dir, settings.memory) if data_dir is not None else None
        self.tasks = TaskStore(native_db) if native_db is not None else None
        self.delivery = Delivery(self.tasks, self.live) if self.tasks is not None else None
        self.knowledge = KnowledgeStore(native_db) if native_db is not None else None
        self.compressor = Compressor(self.knowledge, self.live, settings.compress)
        self.skills = SkillCatalog(skill_roots(settings.skills, user_config_dir), settings.skills)

    def source(self) -> ToolSource:
        changed = self.delivery.changed if self.delivery is not None else _nothing
        return ToolSource("native", [
            *make_memory_specs(self.memory),
            make_skill_spec(self.skills),
            make_scheduler_spec(self.tasks, self.settings.scheduler, changed),
            make_compress_spec(self.compressor),
        ])

    async def watch(self, stop: anyio.Event) -> None:
        """The scheduler's background task (a watcher of the daemon's connection)."""
        if self.delivery is not None:
            await self.delivery.run(stop)

    async def session_live(self, session: LiveSession) -> None:
        """A prompt starts for `session` or it was loaded: it is live, and its due tasks
        are said now."""
        self.live.add(session)
        if self.delivery is not None:
            await self.delivery.surface(session)

    async def forget(self, session_id: str) -> None:
        """The session was deleted: its tasks and Knowledge entries go (logged, never raised:
        the delete itself has happened)."""
        if self.tasks is not None:
            try:
                await self.tasks.forget(session_id)
            except ToolError as exc:
                log.warning("could not delete the tasks of %s: %s", session_id, exc.message)
            if self.delivery is not None:
                self.delivery.forget(session_id)
        if self.knowledge is not None:
            try:
                await self.knowledge.forget(session_id)
            except (DbTimeout, sqlite3.Error, OSError) as exc:
                log.warning("could not delete the Knowledge of %s: %s", session_id, exc)

    async def knowledge_block(self, session_id: str) -> str:
        if self.knowledge is None:
            return ""
        return await self.knowledge.block(session_id, self.settings.compress.max_knowledge_chars)


def _nothing() -> None:
    return None
