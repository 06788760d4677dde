"""The gates' configuration sections (`[tools.utility]`, `[tools.adversarial_policy]`,
`[tools.authorization]`, `[tools.legacy]`, `[tools.hallucination]`).

Every gate is off by default. Unknown keys are errors, like the rest of the config. Policies
and rule patterns are checked when the config loads: a regex that does not compile, an empty
policy or a non-finite weight is a config error, never a gate that silently passes.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

PhaseName = Literal["planner", "executor", "verifier", "autonomous"]
MODEL_PHASES: list[PhaseName] = ["executor", "verifier", "autonomous"]

# The seed's list, plus invoke_skill: orchestration primitives and the agent's own memory.
UTILITY_EXEMPT = ["load_skill", "invoke_skill", "memory_save", "scheduler"]
POLICY_EXEMPT = ["memory_save", "memory_search", "read_overflow", "load_skill",
                 "schedule_deferred"]
MAX_POLICIES = 64
MAX_POLICY_CHARS = 2000


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UtilityWeights(_Section):
    gain: float = Field(1.0, ge=0)
    cost: float = Field(1.0, ge=0)
    redundancy: float = Field(1.0, ge=0)
    exploration: float = Field(1.0, ge=0)

    @field_validator("*")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class UtilityConfig(_Section):
    """`[tools.utility]`: skip model calls whose estimated utility is below `threshold`."""

    enabled: bool = False
    threshold: float = Field(0.0, ge=-10, le=10)
    exempt_tools: list[str] = Field(default_factory=lambda: list(UTILITY_EXEMPT))
    weights: UtilityWeights = Field(default_factory=UtilityWeights)
    window: int = Field(20, ge=1, le=1000)
    """How many recent calls of the session count for redundancy and exploration."""

    @field_validator("exempt_tools")
    @classmethod
    def _skills_exempt(cls, value: list[str]) -> list[str]:
        # A gate that skips skill primitives stalls skill-driven turns (a hard invariant).
        return [*value, *(t for t in ("load_skill", "invoke_skill") if t not in value)]


class AdversarialPolicyConfig(_Section):
    """`[tools.adversarial_policy]`: an LLM judges each call against plain-language policies."""

    enabled: bool = False
    fail_open: bool = False
    """True: a judge error (provider failure, malformed verdict) allows; false denies."""
    policies: list[str] = Field(default_factory=list, max_length=MAX_POLICIES)
    exempt_tools: list[str] = Field(default_factory=lambda: list(POLICY_EXEMPT))
    phases: list[PhaseName] = Field(default_factory=lambda: list(MODEL_PHASES))
    """Phases judged; `planner` (calls the user asked for: slash commands, the CLI) is not,
    by default."""
    max_tokens: int = Field(16, ge=1, le=1024)
    timeout_secs: float = Field(60.0, gt=0, le=600)
    max_param_chars: int = Field(16_000, ge=256, le=1_000_000)

    @field_validator("policies")
    @classmethod
    def _policies(cls, value: list[str]) -> list[str]:
        bad = [p for p in value if not p.strip() or len(p) > MAX_POLICY_CHARS]
        if bad:
            raise ValueError(f"each policy is 1..{MAX_POLICY_CHARS} characters of text")
        return [p.strip() for p in value]


class AuthorizationRule(_Section):
    """One `[[tools.authorization.rules]]` entry (the seed's PolicyRuleConfig fields)."""

    effect: Literal["allow", "ask", "deny"]
    tool: str = Field("*", min_length=1)
    """A tool name or id, or a glob on either."""
    args_match: str | None = None
    """A regex searched in the call's input: the command for bash, else the arguments as
    JSON (keys sorted)."""
    paths: list[str] = Field(default_factory=list)
    """Globs on the paths the call names (relative ones from the workspace)."""
    capabilities: list[str] = Field(default_factory=list)
    """Reserved by the seed for future use; must stay empty."""

    @field_validator("args_match")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if len(value) > 512:
            raise ValueError("a regex of at most 512 characters")
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regex: {exc}") from None
        return value

    @field_validator("capabilities")
    @classmethod
    def _reserved(cls, value: list[str]) -> list[str]:
        if value:
            raise ValueError("reserved for future use: leave it empty")
        return value


class AuthorizationConfig(_Section):
    """`[tools.authorization]`: OAP rules merged after the permission and shell policy rules.
    They only tighten: see docs/gates.md."""

    enabled: bool = False
    rules: list[AuthorizationRule] = Field(default_factory=list)


class LegacyConfig(_Section):
    """`[tools.legacy]`: models without native tool use get the text invocation path."""

    models: list[str] = Field(default_factory=list)
    """Globs on `kind:model` (e.g. `openai:llama-*`): these models are sent no tool schemas;
    they call tools with fenced bash blocks and ToolCall JSON in their text."""

    @field_validator("models")
    @classmethod
    def _globs(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if ":" not in v or not v.strip()]
        if bad:
            raise ValueError(f"globs on kind:model, like openai:llama-* (got {bad})")
        return value


class HallucinationConfig(_Section):
    """`[tools.hallucination]`: warn the model when a call names paths that do not exist."""

    enabled: bool = False
