"""The runner's second half, for a call that was allowed: cache, execute (timed, cancellable,
retried when transient), validate the output, the output stage (filters, secrets, overflow:
tools/output.py), audit, close the card, release what the tool held in the editor."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import orjson

from acpd.tools.cache import cache_key, cacheable
from acpd.tools.calls import Call, CallResult, failed_result
from acpd.tools.capabilities import Cleanup
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.output import Prepared
from acpd.tools.retry import with_retry
from acpd.tools.spec import (
    CallStatus,
    ContentItem,
    DiffItem,
    Effect,
    TextItem,
    ToolCallView,
    ToolContext,
    ToolOutput,
    ToolSpec,
)

if TYPE_CHECKING:
    from acpd.checkpoint.book import Outcome, Pending
    from acpd.tools.pipeline import CallEnv, ToolPipeline

log = logging.getLogger("acpd.tools")

DEFAULT_TOOL_TIMEOUT = 300.0


async def execute(
    pipeline: ToolPipeline, call: Call, spec: ToolSpec, parsed: Any, view: ToolCallView,
    env: CallEnv,
) -> CallResult:
    async def publish(content: list[ContentItem]) -> None:
        # Live output goes to the editor as it comes: it is redacted like the final text.
        view.content = pipeline.output.scrub_items(content)
        await env.observer.publish(view, first=False)

    cleanups: list[Cleanup] = []
    ctx = ToolContext(
        view.tool_call_id, env.cwd, env.roots, env.fs, env.runner, publish, cleanups.append,
        env.shell_timeout, env.output_byte_limit, overflow=env.overflow,
        approved=call.approved_by == "user", elicit=env.elicit, session_id=env.session_id,
        git_read_only=(call.shell is not None and call.shell.sandbox_lifted
                       and call.approved_by != "user"),
    )
    try:
        return await _run(pipeline, call, spec, parsed, view, env, ctx)
    finally:
        # After the final update, never before: an editor shows an empty card for a
        # terminal released while a card still embeds it.
        with anyio.CancelScope(shield=True):
            for cleanup in reversed(cleanups):
                await _quietly(cleanup)


async def _run(
    pipeline: ToolPipeline, call: Call, spec: ToolSpec, parsed: Any, view: ToolCallView,
    env: CallEnv, ctx: ToolContext,
) -> CallResult:
    state = env.state
    key = cache_key(spec, call.args) if cacheable(spec) and state.cache.enabled else None
    output = state.cache.get(key) if key is not None else None
    call.cached = output is not None
    if spec.effect is not Effect.READ_ONLY:
        # It may change files whatever its outcome (a failing command can still write).
        state.cache.invalidate()
    files: Outcome | None = None
    if output is None:
        pending: Pending | None = None
        try:
            pending = await _checkpoint(pipeline, call, spec, view, env)
            output = await _attempts(pipeline, call, spec, parsed, view, env, ctx)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                files = await _changes(pending, ())
                err = ToolError(ErrorCategory.CANCELLED, "the turn was cancelled")
                pipeline.audit_call(call, spec, env, None, err)
                extra = [*view.content, *(files.items if files else ())]
                await close_card(view, env, "failed", "Cancelled.", extra)
            raise
        except ToolError as err:
            state.anomaly.record(spec.id, err.category not in _DECISIONS)
            with anyio.CancelScope(shield=pending is not None):
                # A cancel that arrives while the changes are read must not leave the card open.
                files = await _changes(pending, ())
                record = pipeline.audit_call(call, spec, env, None, err)
                await close_card(view, env, "failed", err.message, files.items if files else ())
            result = failed_result(call, err, record)
            if files is not None and files.line:
                result.text += f"\n{files.line}"
            return result
        files = await _changes(pending, output.content, confined=_confined(spec, output))
        if key is not None:
            state.cache.put(key, output)
        state.anomaly.record(spec.id, False)
    shown = await _prepare(pipeline, spec, call, output, env)
    call.output = shown.info
    record = pipeline.audit_call(
        call, spec, env, ToolOutput(shown.text, shown.raw, failed=output.failed), None
    )
    view.raw_output = shown.raw
    if call.audit_error is not None:
        unaudited = ToolError(
            ErrorCategory.PERMANENT_FAILURE,
            f"{call.audit_error}. The call ran, but its output is withheld: it could not be "
            "audited.", suggestion="Tell the user; no tool call can succeed until the audit "
            "log is writable again.",
        )
        await close_card(view, env, "failed", unaudited.message, output.content)
        return failed_result(call, unaudited, record)
    if output.locations is not None:
        view.locations = [path for path, _ in output.locations]
        view.lines = [line for _, line in output.locations]
    status: CallStatus = "failed" if output.failed else "completed"
    extra = [*output.content, *(files.items if files is not None else ())]
    await close_card(view, env, status, shown.card, extra)
    text = shown.text
    if files is not None and files.line:
        text += ("" if not text or text.endswith("\n") else "\n") + files.line
    return CallResult(
        call.id, call.name, text, None, call.started, call.ended, failed=output.failed,
        record=record,
    )


async def _checkpoint(
    pipeline: ToolPipeline, call: Call, spec: ToolSpec, view: ToolCallView, env: CallEnv
) -> Pending | None:
    """A checkpoint of the workspace before a call that may change files (see
    acpd/checkpoint); None when checkpoints are off or the tool cannot change workspace files."""
    book = pipeline.checkpoints
    if book is None or spec.effect is Effect.READ_ONLY or not spec.workspace_files:
        return None
    return await book.begin(call.id, env.session_id, call.name, view.title, env.cwd,
                            tool_id=spec.id, locations=view.locations)


async def _changes(
    pending: Pending | None, content: Sequence[ContentItem], *, confined: bool = False,
) -> Outcome | None:
    """What the call created, changed and deleted (after it, however it ended)."""
    if pending is None:
        return None
    outcome: Outcome | None = None
    with anyio.CancelScope(shield=True):  # the call ran: what it changed is always recorded
        outcome = await pending.finish([i.path for i in content if isinstance(i, DiffItem)],
                                       confined=confined)
    return outcome


SANDBOXED_TOOLS = frozenset({"core__bash"})
"""Tools whose runner reports the sandbox in `raw["sandbox"]` (a plugin's or an MCP server's
raw output could say anything: never believed)."""


def _confined(spec: ToolSpec, output: ToolOutput) -> bool:
    """The call ran to its end inside bubblewrap (the bash tool says so in its raw output):
    its processes are gone and could write to the workspace only through the workspace's
    own mount, so the file watcher saw every change (acpd/checkpoint/tracking.py). A
    cancelled or failed call, or any other tool, gets a full scan."""
    if spec.id not in SANDBOXED_TOOLS:
        return False
    raw = output.raw
    sandbox = raw.get("sandbox") if isinstance(raw, dict) else None
    return isinstance(sandbox, str) and sandbox.startswith("bwrap")


THREAD_OUTPUT_CHARS = 64 * 1024
"""Outputs longer than this are filtered in a worker thread, off the event loop."""


async def _prepare(
    pipeline: ToolPipeline, spec: ToolSpec, call: Call, output: ToolOutput, env: CallEnv
) -> Prepared:
    """Filters, secrets, overflow (see tools/output.py); the store is written on this
    thread, which owns the session database."""
    stage = pipeline.output
    if len(output.text) > THREAD_OUTPUT_CHARS:
        prepared = await anyio.to_thread.run_sync(stage.prepare, spec, call.args, output)
    else:
        prepared = stage.prepare(spec, call.args, output)
    return stage.store(prepared, env.overflow)


_DECISIONS = frozenset(
    {ErrorCategory.POLICY_BLOCKED, ErrorCategory.CANCELLED, ErrorCategory.CONFIRMATION_REQUIRED}
)
"""Outcomes that are decisions, not tool failures: the anomaly detector ignores them."""


async def _attempts(
    pipeline: ToolPipeline, call: Call, spec: ToolSpec, parsed: Any, view: ToolCallView,
    env: CallEnv, ctx: ToolContext,
) -> ToolOutput:
    timeout = max(DEFAULT_TOOL_TIMEOUT, env.shell_timeout + 30)

    async def attempt() -> ToolOutput:
        call.attempts += 1
        try:
            with anyio.fail_after(timeout):
                output = await spec.execute(parsed, ctx)
        except TimeoutError:
            raise ToolError(ErrorCategory.TIMEOUT, f"{call.name} did not finish in time") from None
        except (ToolError, anyio.get_cancelled_exc_class()):
            raise
        except Exception as exc:  # a tool bug must not end the turn, let alone the daemon
            log.exception("tool %s failed", spec.id)
            message = f"{type(exc).__name__}: {exc}"[:500]
            raise ToolError(ErrorCategory.PERMANENT_FAILURE, message) from None
        check_output(spec, output)
        return output

    async def on_retry(err: ToolError, tries: int, wait: float) -> None:
        view.content = [TextItem(f"{err.category.value}: {err.message}; retrying in {wait:.1f} s")]
        await env.observer.publish(view, first=False)

    output, _ = await with_retry(attempt, pipeline.retry, allowed=spec.can_retry, on_retry=on_retry)
    return output


def check_output(spec: ToolSpec, output: Any) -> None:
    """Output validation: a ToolOutput with text, structured output that is JSON and, when the
    tool declares a model for it, matches it. Raises ToolError(PermanentFailure)."""
    if not isinstance(output, ToolOutput) or not isinstance(output.text, str):
        raise ToolError(
            ErrorCategory.PERMANENT_FAILURE, f"{spec.name} returned {type(output).__name__}"
        )
    if output.raw is None:
        return
    if spec.output_model is not None:
        from pydantic import ValidationError

        try:
            spec.output_model.model_validate(output.raw)
        except ValidationError as exc:
            raise ToolError(
                ErrorCategory.PERMANENT_FAILURE,
                f"{spec.name} returned malformed output: {exc.error_count()} problems",
            ) from None
        return
    try:
        orjson.dumps(output.raw)
    except TypeError as exc:
        raise ToolError(
            ErrorCategory.PERMANENT_FAILURE, f"{spec.name} returned output that is not JSON: {exc}"
        ) from None


async def _quietly(cleanup: Cleanup) -> None:
    try:
        await cleanup()
    except Exception as exc:
        log.warning("cleanup after a tool call failed: %s", exc)


async def close_card(
    view: ToolCallView, env: CallEnv, status: CallStatus, text: str,
    extra: Sequence[ContentItem] = (),
) -> None:
    view.status = status
    view.content = [*extra, TextItem(text)] if text else list(extra)
    await env.observer.publish(view, first=False)
