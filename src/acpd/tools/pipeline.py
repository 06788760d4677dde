"""The runner: the one path every tool call takes, whoever asked (model, slash command, CLI).

resolve -> strip TAFC fields -> enabled? blocked by the anomaly detector? -> quota ->
validate arguments, precheck -> policy decision -> gates (authorization rules, utility, the
policy judge: tools/gates; they only tighten) -> `tool_call` (pending) -> ask the editor when
the decision is ask -> `in_progress` -> execute (cache, timeout, cancellation, retry of
transient failures) -> output validation -> secret scan -> redaction -> audit -> final
`tool_call_update` -> release editor resources -> result for the model (with hallucination
warnings, when on).

The decision comes before the card so a refusal can say why, but every call the model made
still gets its card: a refused one is shown as `tool_call` then a failed update with the
reason, so the editor shows the same sequence either way.

Nothing a model sends can raise out of `run()`: every failure becomes a `[tool_error]` result
with one of the eleven categories. Only cancellation propagates, after the card is closed and
the audit line written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.lowlevel

from acpd.mcpclient import trust as mcp_trust
from acpd.tools.audit import AuditLog
from acpd.tools.calls import Call, CallResult, audit_record, failed_result, record_of
from acpd.tools.capabilities import CommandRunner, FileSystem
from acpd.tools.confirm import confirm_every_command
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.execution import close_card, execute
from acpd.tools.gates.hub import Gates
from acpd.tools.gates.phases import phase_for
from acpd.tools.output import OutputStage
from acpd.tools.overflow import OverflowAccess
from acpd.tools.permissions import Decision, PermissionAnswer, ToolPolicy, approval_key
from acpd.tools.preview import expecting, preview_call
from acpd.tools.quota import QUOTA_BLOCKED
from acpd.tools.registry import ToolRegistry
from acpd.tools.retry import RetryPolicy
from acpd.tools.shellpolicy import ShellPolicies, judge_call
from acpd.tools.spec import Elicit, TextItem, ToolCallView, ToolInvocationRecord, ToolSpec
from acpd.tools.state import SessionTools

if TYPE_CHECKING:
    from acpd.checkpoint.book import Checkpoints
    from acpd.providers.base import Provider

log = logging.getLogger("acpd.tools")

TAFC_PREFIX = "_tafc_think"
USER_DECLINED = "the user declined this call"
__all__ = ["CallEnv", "CallObserver", "CallResult", "MemoryApprovals", "ToolPipeline", "validate"]


class CallObserver(Protocol):
    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        """Show the card: `tool_call` when first, else `tool_call_update`."""
        ...

    async def ask(self, view: ToolCallView) -> PermissionAnswer:
        """Ask the user. A "cancelled" answer also cancels the caller's turn, if it has one;
        "unavailable" means nobody can be asked."""
        ...


class ApprovalSink(Protocol):
    def get(self, key: str, /) -> bool | None: ...

    def set(self, key: str, allowed: bool) -> None: ...


class MemoryApprovals(dict[str, bool]):
    """Remembered answers that live as long as the object (tests, one-shot CLI runs)."""

    def set(self, key: str, allowed: bool) -> None:
        self[key] = allowed


@dataclass(slots=True)
class CallEnv:
    """What one session lends the runner."""

    cwd: str
    roots: tuple[str, ...]
    mode: str
    fs: FileSystem
    runner: CommandRunner
    observer: CallObserver
    approvals: ApprovalSink = field(default_factory=MemoryApprovals)
    state: SessionTools = field(default_factory=SessionTools)
    session_id: str = ""
    shell_timeout: float = 120.0
    output_byte_limit: int = 1 << 20
    overflow: OverflowAccess | None = None
    """This session's overflow entries (the daemon's store); None: outputs are only cut."""
    confirm_commands: Callable[[], bool] | None = None
    """Whether every bash call asks first (the session's "Confirm every command",
    tools/confirm.py), read at each call so a switch flipped mid-turn applies at once."""
    elicit: Elicit | None = None
    """Forms in the editor (ACP elicitation) for tools that need a value from the user."""
    judge: Provider | None = None
    """The session's model, for the adversarial policy gate (set by the turn loop)."""


class ToolPipeline:
    def __init__(
        self, registry: ToolRegistry, policy: ToolPolicy | None = None,
        audit: AuditLog | None = None, retry: RetryPolicy | None = None,
        shell: ShellPolicies | None = None, output: OutputStage | None = None,
        checkpoints: Checkpoints | None = None,
    ) -> None:
        self.registry = registry
        self.policy = policy or ToolPolicy()
        self.audit = audit
        self.retry = retry or RetryPolicy()
        self.shell = shell
        self.output = output or OutputStage()
        """Filters, secret redaction and overflow for every output (tools/output.py)."""
        """The shell policy that judges bash commands (None: mode and rules only)."""
        self.checkpoints = checkpoints
        """Workspace checkpoints around calls that may change files, for undo (None: off)."""
        self.gates = Gates()
        """Authorization rules, utility and policy gates, hallucination warnings (all off
        unless configured: tools/gates)."""

    def forget_session(self, session_id: str) -> None:
        """The session is over in this process (closed, deleted, its window gone): what the
        pipeline kept for it in memory goes (the store keeps what is on disk)."""
        self.gates.forget(session_id)
        if self.shell is not None:
            self.shell.forget(session_id)

    def catalog(self, mode: str, state: SessionTools | None = None, *,
                network: bool = True) -> list[tuple[str, ToolSpec]]:
        """(name, spec) of each tool the model may be shown now, in executor order: never a
        tool that would be denied whatever its input (not enabled, the mode, `deny *`, the
        anomaly detector, a network tool where `network` is False: see `network_allowed`)."""
        extra = state.extra.tools() if state is not None and state.extra is not None else []
        return [
            (self.registry.name_of(spec), spec)
            for spec in [*self.registry, *extra]
            if self.policy.visible(spec, mode)
            and (network or not spec.network)
            and (state is None or state.anomaly.is_blocked(spec.id) is None)
        ]

    async def network_allowed(self, cwd: str, session_id: str = "") -> bool:
        """Whether the shell policy for `cwd` lets network tools run now (no policy: no)."""
        if self.shell is None:
            return False
        return await self.shell.judge_network(cwd=cwd, session_id=session_id) is None

    async def run(
        self, tool_call_id: str, name: str, arguments: dict[str, Any] | None, env: CallEnv,
        *, invalid_json: str | None = None, caller: str = "model", phase: str | None = None,
    ) -> CallResult:
        """`phase`: where in the reasoning cycle the call is made (tools/gates/phases.py);
        None: the caller's default (the model's calls are `executor`)."""
        call = Call(tool_call_id, name[:80], caller, env.mode, time.time())
        call.phase = phase_for(caller, phase)
        spec = self.registry.resolve(name)
        if spec is None and env.state.extra is not None:
            spec = env.state.extra.resolve(name)
        if spec is None:
            refused = self.registry.refused.get(name)
            err = ToolError(ErrorCategory.TOOL_NOT_FOUND, f"no tool named {name[:80]!r}") \
                if refused is None else ToolError(ErrorCategory.POLICY_BLOCKED, refused)
            return await self._refuse(call, None, err, env, "not_found")
        call.name = self.registry.name_of(spec)
        # TAFC reasoning fields go first, before anything (audit included) can see them.
        args = {k: v for k, v in (arguments or {}).items() if not k.startswith(TAFC_PREFIX)}
        call.args = args
        if invalid_json is not None:
            err = ToolError(
                ErrorCategory.INVALID_PARAMETERS,
                f"the arguments are not valid JSON ({invalid_json[:200]})",
            )
            return await self._refuse(call, spec, err, env, "invalid", anomaly=True)
        if arguments and not args:
            # The model only reasoned: nothing to run, nothing to show.
            call.decision = "skipped"
            result = CallResult(call.id, call.name, "", None, call.started, time.time(), True)
            result.record = self.audit_call(call, spec, env, None, None)
            return result
        refusal = self._gate(call, spec, env)
        if refusal is not None:
            return await self._refuse(call, spec, refusal, env, call.decision)
        try:
            parsed = validate(spec, args)
            if spec.precheck is not None:
                spec.precheck(parsed)
        except ToolError as err:
            decision = "deny" if err.category is ErrorCategory.POLICY_BLOCKED else "invalid"
            return await self._refuse(call, spec, err, env, decision, anomaly=True)
        return await self._decide_and_run(call, spec, args, parsed, env)

    def _gate(self, call: Call, spec: ToolSpec, env: CallEnv) -> ToolError | None:
        """Enabled, not blocked, within quota; the error refusing the call otherwise."""
        unaudited = self.audit.problem() if self.audit is not None else None
        if unaudited is not None:
            call.decision, call.decided_by = "deny", "audit"
            return ToolError(
                ErrorCategory.PERMANENT_FAILURE, f"{unaudited}; acpd runs nothing it cannot "
                "audit", suggestion="Tell the user: no tool call can run until the audit log "
                "can be written.",
            )
        if not self.policy.is_enabled(spec):
            call.decision, call.decided_by = "deny", "rule"
            return ToolError(
                ErrorCategory.POLICY_BLOCKED,
                f"{call.name} is not enabled; add it to [tools] enabled in the config",
            )
        blocked = env.state.anomaly.is_blocked(spec.id)
        if blocked is not None:
            call.decision = "anomaly_blocked"
            return ToolError(
                ErrorCategory.POLICY_BLOCKED,
                f"{call.name} is blocked for this session: {blocked}",
                suggestion=f"Do not call it again; the user can lift the block with "
                f"/unblock {call.name}.",
            )
        if not env.state.quota.take():
            call.decision = QUOTA_BLOCKED
            return ToolError(
                ErrorCategory.POLICY_BLOCKED,
                f"{QUOTA_BLOCKED}: this session used its {env.state.quota.limit} tool calls "
                "(max_tool_calls_per_session)",
                suggestion="Stop calling tools and answer with what you have.",
            )
        return None

    async def _decide_and_run(
        self, call: Call, spec: ToolSpec, args: dict[str, Any], parsed: Any, env: CallEnv
    ) -> CallResult:
        key = mcp_trust.approval_key(spec, approval_key(spec, args))
        shell = await judge_call(self.shell, spec, args, env)
        decision = self.policy.decide(spec, env.mode, args, env.cwd, env.approvals, key, shell)
        decision = mcp_trust.judge(spec, decision, self.policy.rules, args, env.cwd)
        decision = confirm_every_command(decision, spec, env.confirm_commands)
        view = ToolCallView(
            call.id, _title(spec, parsed), spec.kind, "pending",
            locations=_locations(spec, parsed, env.cwd), raw_input=args,
        )
        decision = await self._gated(call, spec, args, parsed, decision, view, env, key)
        # A gate that refused named itself in decided_by.
        call.decision, call.decided_by = decision.verdict, call.decided_by or decision.approved_by
        call.shell = decision.shell
        expected = await self._preview(call, spec, parsed, view, env, decision.verdict)
        await env.observer.publish(view, first=True)
        if decision.verdict == "deny":
            err = ToolError(ErrorCategory.POLICY_BLOCKED, decision.reason)
            shown = f"Blocked: {decision.reason}"
            return await self._close_refused(call, spec, view, env, err, shown)
        if decision.verdict == "ask":
            if decision.shell is not None:
                # The prompt says why it asks: the policy's reasons beside the real command
                # (after the preview: editors look for a diff first).
                view.content = [*view.content, TextItem(decision.reason)]
            refused = await self._ask(call, spec, view, env, key)
            if refused is not None:
                return refused
        else:
            call.approved_by = decision.approved_by
        view.status = "in_progress"
        await env.observer.publish(view, first=False)
        result = await execute(self, call, expecting(spec, expected), parsed, view, env)
        return self.gates.after(call, spec, result, env)

    async def _gated(
        self, call: Call, spec: ToolSpec, args: dict[str, Any], parsed: Any,
        decision: Decision, view: ToolCallView, env: CallEnv, key: str,
    ) -> Decision:
        """The decision after the gates (tools/gates): they may only tighten it."""
        try:
            return await self.gates.decide(
                call, spec, args, parsed, decision, env, env.approvals.get(key)
            )
        except anyio.get_cancelled_exc_class():
            # The turn was cancelled while a judge model answered: close the card.
            with anyio.CancelScope(shield=True):
                call.decision, call.decided_by = "deny", "policy_gate"
                await env.observer.publish(view, first=True)
                err = ToolError(ErrorCategory.CANCELLED, "cancelled before it ran")
                await self._close_refused(call, spec, view, env, err, "Cancelled before it ran.")
            raise

    async def _preview(
        self, call: Call, spec: ToolSpec, parsed: Any, view: ToolCallView, env: CallEnv,
        verdict: str,
    ) -> object | None:
        """Fill the pending card with the tool's preview (tools/preview.py); returns what the
        tool must re-check before it acts."""
        if spec.preview is None:
            return None
        try:
            # A refused call gets the cheap part only (bash's title and rawInput): nothing of
            # a file is read for a call that will not run.
            shown = await preview_call(spec, parsed, call.id, env, asking=verdict == "ask")
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # every call the model made gets its card
                await env.observer.publish(view, first=True)
                err = ToolError(ErrorCategory.CANCELLED, "cancelled before it ran")
                await self._close_refused(call, spec, view, env, err, "Cancelled before it ran.")
            raise
        return shown.apply(view) if shown is not None else None

    async def _ask(
        self, call: Call, spec: ToolSpec, view: ToolCallView, env: CallEnv, key: str
    ) -> CallResult | None:
        """Ask the user; None when they allowed the call, else the refused result."""
        try:
            answer = await env.observer.ask(view)
        except anyio.get_cancelled_exc_class():
            # The turn was cancelled while the user decided: close the card, or the editor
            # keeps showing a pending call for ever.
            with anyio.CancelScope(shield=True):
                call.answer = "cancelled"
                err = ToolError(ErrorCategory.CANCELLED, "cancelled while waiting for approval")
                await self._close_refused(call, spec, view, env, err, "Cancelled before it ran.")
            raise
        call.answer = answer
        if answer == "cancelled":
            err = ToolError(ErrorCategory.CANCELLED, "the permission request was cancelled")
            with anyio.CancelScope(shield=True):
                result = await self._close_refused(
                    call, spec, view, env, err, "Cancelled before it ran."
                )
            # The observer has cancelled the turn, and this checkpoint delivers it. A bare
            # CancelledError raised outside a cancelled scope would instead end the caller's
            # task group (the whole daemon); a caller with no turn to cancel gets the result.
            await anyio.lowlevel.checkpoint()
            return result
        if answer == "unavailable":
            err = ToolError(
                ErrorCategory.CONFIRMATION_REQUIRED,
                f"{call.name} needs approval and nobody can be asked here",
                suggestion="Approve it interactively, run in auto mode, or add an allow rule "
                f"under [tools.permissions.{spec.name}].",
            )
            return await self._close_refused(call, spec, view, env, err, err.message)
        if answer.endswith("_always"):
            env.approvals.set(key, answer == "allow_always")
        if answer.startswith("reject"):
            err = ToolError(ErrorCategory.POLICY_BLOCKED, USER_DECLINED, suggestion=(
                "The user said no: do not retry it in another form unless they ask you to."))
            return await self._close_refused(call, spec, view, env, err, "Rejected by the user.")
        call.approved_by = "user"
        return None

    async def _refuse(
        self, call: Call, spec: ToolSpec | None, err: ToolError, env: CallEnv, decision: str,
        *, anomaly: bool = False,
    ) -> CallResult:
        """A call refused before its card existed: show `tool_call` then the failure."""
        call.decision = decision
        if anomaly and spec is not None:
            env.state.anomaly.record(spec.id, True)
        kind = spec.kind if spec is not None else "other"
        view = ToolCallView(call.id, call.name or "tool", kind, "pending", raw_input=call.args)
        await env.observer.publish(view, first=True)
        return await self._close_refused(call, spec, view, env, err, err.format_for_model())

    async def _close_refused(
        self, call: Call, spec: ToolSpec | None, view: ToolCallView, env: CallEnv,
        err: ToolError, shown: str,
    ) -> CallResult:
        record = self.audit_call(call, spec, env, None, err)
        await close_card(view, env, "failed", shown)
        return failed_result(call, err, record)

    def audit_call(
        self, call: Call, spec: ToolSpec | None, env: CallEnv, output: Any,
        err: ToolError | None,
    ) -> ToolInvocationRecord:
        """Build the redacted record and write the audit line (before the result returns).

        A failing audit write is not swallowed: a call that cannot be audited must not look
        audited, so the failure is kept in `call.audit_error` and the call reported failed.
        """
        call.ended = time.time()
        record = record_of(call, spec, output, err)
        if self.audit is not None:
            policy_hash = self.policy.policy_hash(call.mode)
            trust = self.shell.trust_for(env.cwd) if self.shell is not None else None
            try:
                self.audit.write(
                    audit_record(call, spec, env.session_id, record, err, policy_hash, trust)
                )
            except OSError as exc:
                # Kept on the call, not raised: the card must still be closed, and the
                # caller fails a call that ran (execution.py) with this message.
                log.error("%s", exc.strerror or exc)
                call.audit_error = str(exc.strerror or exc)
        return record


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
