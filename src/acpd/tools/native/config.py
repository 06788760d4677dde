"""`[tools.native]`: the native tools' limits (memory, skills, scheduler, compress_context).

Every bound has a floor and a ceiling here, so a config file cannot turn a limit off by
accident: a huge period, a zero budget or a negative count is refused when the config loads.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryConfig(_Section):
    max_entries: int = Field(10_000, ge=1, le=1_000_000)
    """Entries one project may hold; memory_save is refused past it (nothing is evicted)."""
    max_content_chars: int = Field(8_000, ge=16, le=200_000)
    budget_secs: float = Field(2.0, gt=0, le=60)
    """Longest a memory query may run (SQLite is interrupted after it), off the event loop."""


class SkillsConfig(_Section):
    dirs: list[str] = Field(default_factory=list)
    """Folders holding <name>/SKILL.md, searched before the user's and the workspace's."""
    user_dir: bool = True
    """Also search the user's skills folder (<config dir>/acpd/skills)."""
    workspace_dir: bool = True
    """Also search the workspace's .acpd/skills/ (found at each call, for that session)."""


class SchedulerConfig(_Section):
    max_tasks: int = Field(20, ge=1, le=1000)
    """Pending tasks one session may have."""
    min_period_secs: float = Field(60.0, ge=1, le=86_400)
    max_delay_secs: float = Field(30 * 86_400.0, ge=1, le=366 * 86_400.0)
    """Furthest ahead a task may be due (and the longest period)."""
    max_message_chars: int = Field(2_000, ge=1, le=20_000)


class CompressConfig(_Section):
    keep_recent_turns: int = Field(1, ge=1, le=100)
    """User turns (each prompt and what followed it) kept verbatim; older ones are summarised."""
    min_messages: int = Field(2, ge=1, le=1000)
    """Fewer older messages than this: nothing to compress (the call says so)."""
    max_summary_tokens: int = Field(1024, ge=64, le=32_000)
    max_transcript_chars: int = Field(200_000, ge=1_000, le=2_000_000)
    """What the summariser is sent at most (the newest part of the older history)."""
    budget_secs: float = Field(120.0, gt=0, le=900)
    max_knowledge_chars: int = Field(32_000, ge=1_000, le=400_000)
    """The Knowledge block's cap in the system prompt: the oldest summaries give way."""
    model: str = Field("", max_length=4096)
    """The model that summarises (`openai:NAME`, `anthropic:NAME`, `scripted:PATH`, as for
    `[agent] model`); empty: the session's own (the seeds' `compress_provider`)."""

    @field_validator("model")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value:
            from acpd.providers.factory import parse_spec

            parse_spec(value)  # ProviderSpecError (a ValueError) names the forms accepted
        return value


class NativeConfig(_Section):
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    compress: CompressConfig = Field(default_factory=CompressConfig)
