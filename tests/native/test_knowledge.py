"""The Knowledge block: stored entries (real SQLite) reach the system prompt of the next turn,
appended (never replacing), capped with the oldest entries giving way."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from acpd.daemon.native_hooks import loop_limits
from acpd.daemon.turn import DEFAULT_SYSTEM_PROMPT, LoopLimits
from acpd.providers.base import Message, ModelEvent, ModelRequest, StopEvent, TextDelta
from acpd.tools.native.compress import cut_point, knowledge_block, transcript
from tests.native.conftest import RigFactory

pytestmark = pytest.mark.anyio


async def test_entries_reach_the_system_prompt_appended(rig: RigFactory) -> None:
    kit = rig().kit
    assert kit.native is not None and kit.native.knowledge is not None
    rt = SimpleNamespace(toolkit=kit, limits=LoopLimits())
    session = SimpleNamespace(id="sess-k")
    assert await loop_limits(session, rt) is rt.limits  # type: ignore[arg-type]
    await kit.native.knowledge.append("sess-k", "first summary", "autonomous", 4)
    await kit.native.knowledge.append("sess-k", "second summary", "autonomous", 2)
    await kit.native.knowledge.append("sess-other", "not mine", "autonomous", 2)
    limits = await loop_limits(session, rt)  # type: ignore[arg-type]
    system = limits.system_prompt or ""
    assert system.startswith(DEFAULT_SYSTEM_PROMPT)
    assert system.index("first summary") < system.index("second summary")
    assert "## Knowledge" in system and "not mine" not in system
    own = SimpleNamespace(toolkit=kit, limits=LoopLimits(system_prompt="Custom {cwd}"))
    assert (await loop_limits(session, own)).system_prompt.startswith("Custom {cwd}")  # type: ignore[arg-type,union-attr]


def test_the_block_keeps_the_newest_within_its_cap() -> None:
    block = knowledge_block(["a" * 600, "b" * 600, "c" * 600], 1_300)
    assert "c" * 600 in block and "b" * 600 in block and "a" * 600 not in block
    assert "1 older summaries dropped" in block
    assert knowledge_block([], 1_000) == ""


def test_the_cut_keeps_whole_turns_and_the_transcript_is_capped() -> None:
    history = [Message("user", "one"), Message("assistant", "a1"), Message("user", "two"),
               Message("assistant", "", []), Message("tool", "r" * 5000, tool_call_id="c"),
               Message("user", "three")]
    assert cut_point(history, 1) == 5 and cut_point(history, 2) == 2
    assert cut_point(history, 9) == 0
    text = transcript(history[:5], 100_000)
    assert "USER: one" in text and "characters in all]" in text
    assert transcript(history, 1_000).startswith("[... the oldest part is left out ...]")


class HeldModel:
    """A model whose summary waits until the test lets it go."""

    context_window = 100_000
    name = "held"

    def __init__(self) -> None:
        self.go = anyio.Event()
        self.asked = anyio.Event()

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        assert request.tools == []  # the summariser is never given a tool
        self.asked.set()
        await self.go.wait()
        yield TextDelta("the summary")
        yield StopEvent("end_turn")


class LentSession:
    def __init__(self, model: HeldModel) -> None:
        self.id = "sess-test"
        self.model = model
        self.history = [Message("user", "one"), Message("assistant", "a1"),
                        Message("user", "two"), Message("assistant", "a2"),
                        Message("user", "compress")]

    def provider(self) -> HeldModel:
        return self.model

    def in_turn(self) -> bool:
        return True

    def closed(self) -> bool:
        return False

    async def say(self, text: str) -> None:
        return None

    def drop_oldest(self, count: int) -> None:
        del self.history[:count]


async def test_a_compress_while_compressing_is_refused(rig: RigFactory) -> None:
    r = rig()
    assert r.kit.native is not None
    model = HeldModel()
    session = LentSession(model)
    r.kit.native.live.add(session)  # type: ignore[arg-type]
    results = []
    async with anyio.create_task_group() as group:
        async def first() -> None:
            results.append(await r.run("compress_context", {}))

        group.start_soon(first)
        await model.asked.wait()
        second = await r.run("compress_context", {})
        assert second.error is not None and "already running" in second.text
        assert len(session.history) == 5
        model.go.set()
    (done,) = results
    assert done.error is None and "Compressed 4 earlier messages" in done.text, done.text
    assert [m.text for m in session.history] == ["compress"]


def test_a_compress_model_of_an_unknown_kind_is_a_config_error(tmp_path: Path) -> None:
    from acpd.daemon.config import load_config
    from acpd.daemon.errors import ConfigError

    path = tmp_path / "acpd.toml"
    path.write_text('[tools.native.compress]\nmodel = "nonsense"\n')
    with pytest.raises(ConfigError, match=r"compress.*model|use openai:NAME"):
        load_config(str(path))
    path.write_text('[tools.native.scheduler]\nmin_period_secs = 0\n')
    with pytest.raises(ConfigError, match="min_period_secs"):
        load_config(str(path))
