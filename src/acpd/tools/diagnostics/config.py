"""`[tools.diagnostics]`: the `diagnostics` tool's limits and checkers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CheckerName = Literal["cargo", "clippy", "ruff", "mypy", "tsc", "eslint"]


class DiagnosticsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_diagnostics: int = Field(50, ge=1, le=10_000)
    """At most this many diagnostics are returned (the result says when it cut)."""
    timeout_secs: float = Field(300.0, gt=0, le=3600)
    """For the whole run (all the checkers of one call)."""
    checkers: list[CheckerName] = Field(default_factory=list)
    """Empty: detected from the workspace (Cargo.toml, ruff/mypy config, tsconfig.json,
    an eslint config); else exactly these."""
