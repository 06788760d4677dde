"""The one path every tool call takes, whoever asked for it (the model, a slash command).

resolve -> strip TAFC fields -> validate -> `tool_call` (pending) -> decide (mode, remembered
approvals) -> ask the editor when needed -> `in_progress` -> execute (timed, cancellable) ->
final `tool_call_update` -> release editor resources -> result for the model.

Nothing a model sends can raise out of `run()`: every failure becomes a `[tool_error]` result
with one of the eleven categories. Only cancellation propagates, after the card is closed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.lowlevel

from acpd.tools.capabilities import Cleanup, CommandRunner, FileSystem
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.permissions import PermissionAnswer, approval_key, decide
from acpd.tools.registry import ToolRegistry
from acpd.tools.spec import (
    CallStatus,
    ContentItem,
    TextItem,
    ToolCallView,
    ToolContext,
    ToolSpec,
)

log = logging.getLogger("acpd.tools")

TAFC_PREFIX = "_tafc_think"
DEFAULT_TOOL_TIMEOUT = 300.0


class CallObserver(Protocol):
    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        """Show the card: `tool_call` when first, else `tool_call_update`."""
        ...

    async def ask(self, view: ToolCallView) -> PermissionAnswer:
        """Ask the user. A "cancelled" answer also cancels the caller's turn, if it has one."""
        ...


@dataclass(slots=True)
class CallEnv:
    """What one session lends the pipeline."""

    cwd: str
    roots: tuple[str, ...]
    mode: str
    fs: FileSystem
    runner: CommandRunner
    observer: CallObserver
    remembered: dict[str, bool] = field(default_factory=dict)
    shell_timeout: float = 120.0
    output_byte_limit: int = 1 << 20


@dataclass(slots=True)
class CallResult:
    tool_call_id: str
    name: str
    text: str
    """What the model reads: the output, or a `[tool_error]` block."""
    error: ToolError | None
    started_at: float
    ended_at: float
    skipped: bool = False


class ToolPipeline:
    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry

    async def run(
        self, tool_call_id: str, name: str, arguments: dict[str, Any] | None, env: CallEnv,
        *, invalid_json: str | None = None,
    ) -> CallResult:
        started = time.time()
        spec = self.registry.resolve(name)
        if spec is None:
            err = ToolError(ErrorCategory.TOOL_NOT_FOUND, f"no tool named {name[:80]!r}")
            return await self._refuse(tool_call_id, name, arguments, err, env, started)
        if invalid_json is not None:
            err = ToolError(
                ErrorCategory.INVALID_PARAMETERS,
                f"the arguments are not valid JSON ({invalid_json[:200]})",
            )
            return await self._refuse(tool_call_id, spec.name, arguments, err, env, started)
        args = {k: v for k, v in (arguments or {}).items() if not k.startswith(TAFC_PREFIX)}
        if arguments and not args:
            # The model only reasoned (TAFC fields alone): nothing to run, nothing to show.
            return CallResult(tool_call_id, spec.name, "", None, started, time.time(), True)
        try:
            parsed = validate(spec, args)
        except ToolError as err:
            return await self._refuse(tool_call_id, spec.name, args, err, env, started)
        return await self._execute(tool_call_id, spec, args, parsed, env, started)

    async def _execute(
        self, call_id: str, spec: ToolSpec, args: dict[str, Any], parsed: Any, env: CallEnv,
        started: float,
    ) -> CallResult:
        view = ToolCallView(
            call_id, _title(spec, parsed), spec.kind, "pending",
            locations=_locations(spec, parsed, env.cwd), raw_input=args,
        )
        await env.observer.publish(view, first=True)
        key = approval_key(spec, args)
        decision = decide(spec, env.mode, env.remembered, key)
        if decision.verdict == "ask":
            try:
                answer = await env.observer.ask(view)
            except anyio.get_cancelled_exc_class():
                # The turn was cancelled while the user decided: close the card, or the
                # editor keeps showing a pending call for ever.
                with anyio.CancelScope(shield=True):
                    await _close(view, env, "failed", "Cancelled before it ran.")
                raise
            if answer == "cancelled":
                with anyio.CancelScope(shield=True):
                    await _close(view, env, "failed", "Cancelled before it ran.")
                # The observer has cancelled the turn, and this checkpoint delivers it. A
                # bare CancelledError raised outside a cancelled scope would instead end the
                # caller's task group (the whole daemon); a caller with no turn to cancel
                # gets a Cancelled result.
                await anyio.lowlevel.checkpoint()
                err = ToolError(ErrorCategory.CANCELLED, "the permission request was cancelled")
                return _failed(call_id, spec.name, err, started)
            if answer.endswith("_always"):
                env.remembered[key] = answer == "allow_always"
            if answer.startswith("reject"):
                err = ToolError(ErrorCategory.POLICY_BLOCKED, "the user rejected this call")
                await _close(view, env, "failed", "Rejected by the user.")
                return _failed(call_id, spec.name, err, started)
        elif decision.verdict == "deny":
            err = ToolError(ErrorCategory.POLICY_BLOCKED, decision.reason)
            await _close(view, env, "failed", f"Blocked: {decision.reason}")
            return _failed(call_id, spec.name, err, started)
        view.status = "in_progress"
        await env.observer.publish(view, first=False)
        return await self._run_tool(view, spec, parsed, env, started)

    async def _run_tool(
        self, view: ToolCallView, spec: ToolSpec, parsed: Any, env: CallEnv, started: float
    ) -> CallResult:
        async def publish(content: list[ContentItem]) -> None:
            view.content = content
            await env.observer.publish(view, first=False)

        cleanups: list[Cleanup] = []
        ctx = ToolContext(
            view.tool_call_id, env.cwd, env.roots, env.fs, env.runner, publish, cleanups.append,
            env.shell_timeout, env.output_byte_limit,
        )
        try:
            return await self._run_in(ctx, view, spec, parsed, env, started)
        finally:
            # After the final update, never before: an editor shows an empty card for a
            # terminal released while a card still embeds it.
            with anyio.CancelScope(shield=True):
                for cleanup in reversed(cleanups):
                    await _quietly(cleanup)

    async def _run_in(
        self, ctx: ToolContext, view: ToolCallView, spec: ToolSpec, parsed: Any, env: CallEnv,
        started: float,
    ) -> CallResult:
        try:
            with anyio.fail_after(max(DEFAULT_TOOL_TIMEOUT, env.shell_timeout + 30)):
                output = await spec.execute(parsed, ctx)
        except ToolError as err:
            await _close(view, env, "failed", err.message)
            return _failed(view.tool_call_id, spec.name, err, started)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await _close(view, env, "failed", "Cancelled.", view.content)
            raise
        except TimeoutError:
            late = ToolError(ErrorCategory.TIMEOUT, f"{spec.name} did not finish in time")
            await _close(view, env, "failed", late.message)
            return _failed(view.tool_call_id, spec.name, late, started)
        except Exception as exc:  # a tool bug must not end the turn, let alone the daemon
            log.exception("tool %s failed", spec.id)
            bug = ToolError(ErrorCategory.PERMANENT_FAILURE, f"{type(exc).__name__}: {exc}"[:500])
            await _close(view, env, "failed", bug.message)
            return _failed(view.tool_call_id, spec.name, bug, started)
        view.raw_output = output.raw
        status: CallStatus = "failed" if output.failed else "completed"
        await _close(view, env, status, output.text, output.content)
        return CallResult(view.tool_call_id, spec.name, output.text, None, started, time.time())

    async def _refuse(
        self, call_id: str, name: str, args: Any, err: ToolError, env: CallEnv, started: float
    ) -> CallResult:
        spec = self.registry.resolve(name)
        kind = spec.kind if spec is not None else "other"
        view = ToolCallView(call_id, name[:80] or "tool", kind, "pending", raw_input=args)
        await env.observer.publish(view, first=True)
        await _close(view, env, "failed", err.format_for_model())
        return _failed(call_id, name, err, started)


async def _quietly(cleanup: Cleanup) -> None:
    try:
        await cleanup()
    except Exception as exc:
        log.warning("cleanup after a tool call failed: %s", exc)


def validate(spec: ToolSpec, args: dict[str, Any]) -> Any:
    """Parse `args` with the tool's model; raises ToolError (InvalidParameters/TypeMismatch)."""
    from pydantic import ValidationError

    try:
        return spec.params.model_validate(args)
    except ValidationError as exc:
        problems = exc.errors(include_url=False, include_input=False)
        type_errors = all(p["type"].endswith("_type") or "parsing" in p["type"] for p in problems)
        category = ErrorCategory.TYPE_MISMATCH if type_errors else ErrorCategory.INVALID_PARAMETERS
        detail = "; ".join(
            f"{'.'.join(str(x) for x in p['loc']) or '(arguments)'}: {p['msg']}" for p in problems
        )
        raise ToolError(category, detail[:800]) from None


async def _close(
    view: ToolCallView, env: CallEnv, status: CallStatus, text: str,
    extra: Sequence[ContentItem] = (),
) -> None:
    view.status = status
    view.content = [*extra, TextItem(text)] if text else list(extra)
    await env.observer.publish(view, first=False)


def _failed(call_id: str, name: str, err: ToolError, started: float) -> CallResult:
    return CallResult(call_id, name, err.format_for_model(), err, started, time.time())


def _title(spec: ToolSpec, parsed: Any) -> str:
    try:
        return spec.title(parsed)[:300]
    except Exception:
        return spec.name


def _locations(spec: ToolSpec, parsed: Any, cwd: str) -> list[str]:
    try:
        return spec.locations(parsed, cwd)
    except Exception:
        return []

