"""Shared pieces: test tools registered like real ones, a recording observer, a runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
from acpd.tools.audit import AuditLog
from acpd.tools.builtin import core_sources
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.permissions import PermissionAnswer, ToolPolicy
from acpd.tools.pipeline import CallEnv, MemoryApprovals, ToolPipeline
from acpd.tools.registry import ToolRegistry, ToolSource
from acpd.tools.retry import RetryPolicy
from acpd.tools.rules import RuleSet
from acpd.tools.spec import (
    Effect,
    ToolCallView,
    ToolContext,
    ToolOutput,
    ToolSpec,
    redaction,
)
from acpd.tools.state import SessionTools


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field("x", description="a path")
    count: int | None = Field(None, ge=0)


@dataclass
class Behaviour:
    """What the test tools do on their next calls: raise these errors in turn, then succeed."""

    errors: list[ToolError] = field(default_factory=list)
    calls: int = 0
    raw: Any = None
    text: str = "ok"


def make_tool(
    name: str, effect: Effect, behaviour: Behaviour, *, kind: Any = "other",
    retry_safe: bool | None = None, output_model: type[BaseModel] | None = None,
) -> ToolSpec:
    async def execute(args: Args, ctx: ToolContext) -> ToolOutput:
        behaviour.calls += 1
        if behaviour.errors:
            raise behaviour.errors.pop(0)
        return ToolOutput(f"{behaviour.text} {args.path}", raw=behaviour.raw)

    return ToolSpec(
        id=f"plugin__{name}", name=name, description=f"test tool {name}", params=Args,
        effect=effect, kind=kind, execute=execute, title=lambda a: f"{name} {a.path}",
        locations=lambda a, cwd: [], redaction=redaction(("path", "count"), ("path",)),
        retry_safe=retry_safe, output_model=output_model,
    )


class Observer:
    """Records every publish; answers permission requests from a list (or a function)."""

    def __init__(self, answers: list[PermissionAnswer] | None = None) -> None:
        self.answers = list(answers or [])
        self.events: list[tuple[str, str, str]] = []  # (what, call id, status)
        self.asked: list[ToolCallView] = []
        self.views: list[dict[str, Any]] = []

    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        self.events.append(("tool_call" if first else "update", view.tool_call_id, view.status))
        self.views.append({"status": view.status, "content": list(view.content),
                           "title": view.title, "raw_output": view.raw_output})

    async def ask(self, view: ToolCallView) -> PermissionAnswer:
        self.asked.append(view)
        self.events.append(("ask", view.tool_call_id, view.status))
        return self.answers.pop(0) if self.answers else "reject_once"

    def statuses(self) -> list[str]:
        return [s for what, _, s in self.events if what != "ask"]

    def final_text(self) -> str:
        content = self.views[-1]["content"]
        return str(content[-1].text) if content else ""


@dataclass
class Rig:
    pipeline: ToolPipeline
    observer: Observer
    env: CallEnv
    audit_path: Path
    behaviours: dict[str, Behaviour]

    async def call(self, name: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
        self.n = getattr(self, "n", 0) + 1
        return await self.pipeline.run(f"call-{self.n}", name, args or {}, self.env, **kw)

    def audit(self) -> list[dict[str, Any]]:
        import json

        return [json.loads(line) for line in self.audit_path.read_text().splitlines()]


RigFactory = Callable[..., Rig]


@pytest.fixture
def rig(tmp_path: Path) -> RigFactory:
    def build(
        *, mode: str = "ask", answers: list[PermissionAnswer] | None = None,
        rules: dict[str, list[tuple[str, Any]]] | None = None,
        enabled: tuple[str, ...] = ("core__*", "plugin__*"), state: SessionTools | None = None,
        retry: RetryPolicy | None = None, audit: bool = True,
    ) -> Rig:
        behaviours = {n: Behaviour() for n in ("probe", "mutate", "net")}
        extra = ToolSource("test", [
            make_tool("probe", Effect.READ_ONLY, behaviours["probe"]),
            make_tool("mutate", Effect.STATE_CHANGE, behaviours["mutate"], kind="edit"),
            make_tool("net", Effect.EXTERNAL_SIDE_EFFECT, behaviours["net"], kind="fetch"),
        ])
        registry = ToolRegistry.from_sources([*core_sources(), extra])
        ws = tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        audit_path = tmp_path / "data" / "audit.jsonl"
        log = AuditLog(audit_path) if audit else None
        policy = ToolPolicy(enabled, RuleSet(rules or {}))
        pipeline = ToolPipeline(
            registry, policy, log, retry or RetryPolicy(jitter=lambda: 0.0, base_ms=1)
        )
        observer = Observer(answers)
        env = CallEnv(
            str(ws), (str(ws),), mode, LocalFileSystem(), LocalCommandRunner(), observer,
            MemoryApprovals(), state or SessionTools(), "sess-test",
        )
        return Rig(pipeline, observer, env, audit_path, behaviours)

    return build


def transient(category: ErrorCategory = ErrorCategory.NETWORK_ERROR) -> ToolError:
    return ToolError(category, "flaky")
