"""`[agent.catalog]`: what the model is shown each turn (docs/catalog.md).

Three switches, all off by default (no behaviour change until a user opts in):
  - `[agent.catalog] enabled`: schema filtering (always_on, name-mentioned, short descriptions,
    tools without a vector, then the top_k most similar to the user's message);
  - `[agent.catalog.tafc] enabled`: a `_tafc_think` field in complex schemas;
  - `[agent.catalog.dependencies] enabled`: `requires` hides a tool until its prerequisites
    completed in this session, `prefers` boosts its similarity.
The seeds call these `[agent.tool_filter]`, `[tools.tafc]` and `[tools.dependencies]`; acpd keeps
them in one section because they build one thing, the per-turn catalog.
"""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_THRESHOLD = 0.6
DEFAULT_ALWAYS_ON = (
    "memory_search", "memory_save", "load_skill", "scheduler", "compress_context",
    "read_overflow", "update_plan", "ask_user",
)
"""The seed's four plus the agent's own plumbing, which no user request names: the model
must always be able to read a cut output back, keep its plan, ask the user."""
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_*?\[\]!-]{1,140}$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def clamp_threshold(value: float) -> float:
    """The seeds' rule: clamped to [0, 1]; NaN and infinities reset to the default 0.6."""
    if not math.isfinite(value):
        return DEFAULT_THRESHOLD
    return min(1.0, max(0.0, value))


class TafcConfig(_Section):
    enabled: bool = False
    complexity_threshold: float = DEFAULT_THRESHOLD
    """[0, 1]; a schema scoring at least this gets `_tafc_think`. NaN/Inf -> 0.6."""

    @field_validator("complexity_threshold", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be a number in [0, 1], not a boolean")
        return value

    @field_validator("complexity_threshold")
    @classmethod
    def _clamp(cls, value: float) -> float:
        return clamp_threshold(value)


class DependencyRule(_Section):
    requires: list[str] = Field(default_factory=list)
    """Hard gate: hidden until every one of these completed in this session."""
    prefers: list[str] = Field(default_factory=list)
    """Soft: +boost_per_dep similarity per one completed (capped at max_total_boost)."""

    @field_validator("requires", "prefers")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        return _check_names(value)


class DependenciesConfig(_Section):
    enabled: bool = False
    boost_per_dep: float = Field(0.15, ge=0, le=1)
    max_total_boost: float = Field(0.20, ge=0, le=1)
    rules: dict[str, DependencyRule] = Field(default_factory=dict)
    """Tool name (as /tools shows it) or id -> its rule."""

    @field_validator("rules")
    @classmethod
    def _rule_names(cls, value: dict[str, DependencyRule]) -> dict[str, DependencyRule]:
        _check_names(list(value))
        return value


class EmbeddingsConfig(_Section):
    """An OpenAI-compatible `/embeddings` endpoint; no model: the built-in BM25 scorer."""

    model: str | None = Field(None, min_length=1, max_length=200)
    base_url: str | None = None
    """Default: `[providers.openai] base_url`, else https://api.openai.com/v1."""
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Default: `[providers.openai] api_key_env`, else OPENAI_API_KEY (unset: no header)."""
    timeout: float = Field(10.0, gt=0, le=120)
    """Per request; past it the turn uses BM25 (and /status says why)."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError(f"must be an http(s) URL, not {value!r}")
        return value


class CatalogConfig(_Section):
    enabled: bool = False
    """Schema filtering; off: every visible tool is sent, as before."""
    top_k: int = Field(10, ge=1, le=1000)
    """How many tools the similarity ranking adds (beyond those always included)."""
    min_description_words: int = Field(3, ge=0, le=100)
    """A tool whose description has fewer words is always sent (too short to rank)."""
    always_on: list[str] = Field(default_factory=lambda: list(DEFAULT_ALWAYS_ON))
    """Names, ids or globs always sent (and never held back by `requires`); names of tools
    that do not exist match nothing."""
    tafc: TafcConfig = Field(default_factory=TafcConfig)
    dependencies: DependenciesConfig = Field(default_factory=DependenciesConfig)
    embeddings: EmbeddingsConfig = Field(default_factory=EmbeddingsConfig)

    @field_validator("always_on")
    @classmethod
    def _always_on(cls, value: list[str]) -> list[str]:
        return _check_names(value)


def _check_names(value: list[str]) -> list[str]:
    bad = [v for v in value if not _TOOL_NAME.match(v)]
    if bad:
        raise ValueError(f"not tool names, ids or globs: {bad}")
    return value
