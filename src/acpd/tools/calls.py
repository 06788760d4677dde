"""One call's bookkeeping on its way through the runner, and the records made from it.

Audit line fields: ts, session, toolCallId, tool (namespaced id), name, call (redacted
arguments), result (redacted summary), decision (allow / ask / deny / quota_blocked /
anomaly_blocked / not_found / invalid / skipped), answer (the user's, when asked),
policy_hash, mode, trust (the workspace's trust level under the shell policy: untrusted /
provisional / trusted; null when no shell policy is configured), approved_by (auto / user /
rule / mode; null when the call was not approved), decided_by (who refused it), exit_code,
truncated, error_category, error, caller (model / slash / cli / lsp: who in the process
asked), caller_id (the invoking principal: `acp:<sessionId>` for a call made in an ACP
session, null for the CLI and the LSP face), phase (planner / executor / verifier /
autonomous, tools/gates/phases.py), gates (what the gates found: utility score, the policy
judge's verdict, matched authorization rules, missing paths; null when none looked),
adversarial_policy_decision (allow / deny, or null when the judge did not look), attempts,
cached, duration_ms, rules_hash, shell_policy.

error_category is set for every call that ended in a `[tool_error]`: a refused or failed call,
and a shell exit the taxonomy classifies (126, 127, "No such file or directory", "Permission
denied", a timeout). A plain non-zero exit (a failing test run) is the command's answer, not
a tool error: its exit_code says it and error_category stays null.

policy_hash: for a bash call the shell policy's hash (the one `acpd policy check` prints), else
the digest of the runner's own rules (enabled tools, permission rules, mode), which is also
rules_hash. shell_policy: the shell policy's {verdict, rules, reasons} for bash, else null.
decided_by / approved_by "policy": the shell policy refused / allowed it.

exit_code is null only for tools that are not shells. A shell call that never got an exit
status has one anyway: 126 when policy refused it (the code the seeds classify as
PolicyBlocked), -1 when it was refused otherwise, cancelled, killed or timed out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acpd.tools.audit import caller_id, now_iso
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.redaction import redact_args, scrub, summarize_result
from acpd.tools.spec import ToolInvocationRecord, ToolOutput, ToolSpec

if TYPE_CHECKING:
    from acpd.policy.decision import Decision as ShellDecision

NO_STATUS = -1
POLICY_EXIT = 126


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
    failed: bool = False
    """The call failed (an error, or the tool ran and reported failure: a non-zero exit)."""
    record: ToolInvocationRecord | None = None


@dataclass(slots=True)
class Call:
    id: str
    name: str
    caller: str
    mode: str
    started: float
    args: dict[str, Any] = field(default_factory=dict)
    decision: str = "allow"
    decided_by: str | None = None
    approved_by: str | None = None
    answer: str | None = None
    attempts: int = 0
    cached: bool = False
    ended: float = 0.0
    output: dict[str, Any] | None = None
    """What the output stage did: filter rule, lines in/out, secret kinds, overflow id."""
    shell: ShellDecision | None = None
    """The shell policy's decision (bash calls that reached the decision)."""
    audit_error: str | None = None
    """Why the audit line could not be written (the call is then reported failed)."""
    phase: str = "executor"
    """Where in the reasoning cycle it was made (tools/gates/phases.py)."""
    gates: dict[str, Any] = field(default_factory=dict)
    """What the gates found (tools/gates), for the audit line."""


def record_of(
    call: Call, spec: ToolSpec | None, output: ToolOutput | None, err: ToolError | None
) -> ToolInvocationRecord:
    """The redacted record; a tool without a redaction config (which the registry never
    lets in) has its arguments reduced to their names."""
    if spec is not None and spec.redaction is not None:
        args = redact_args(spec, call.args)
        result = summarize_result(spec, output) if output is not None else None
    else:
        args = {key: "[redacted]" for key in call.args}
        result = None
    error = (
        {"category": err.category.value, "message": scrub(err.message)}
        if err is not None else None
    )
    return ToolInvocationRecord(call.id, call.name, args, result, error, call.started, call.ended)


def audit_record(
    call: Call, spec: ToolSpec | None, session: str, record: ToolInvocationRecord,
    err: ToolError | None, policy_hash: str, trust: str | None = None,
) -> dict[str, Any]:
    raw = record.result or {}
    category = err.category.value if err is not None else raw.get("error_category")
    return {
        "ts": now_iso(),
        "session": session,
        "toolCallId": call.id,
        "tool": spec.id if spec is not None else None,
        "name": call.name,
        "call": record.args,
        "result": record.result,
        "decision": call.decision,
        "answer": call.answer,
        "policy_hash": call.shell.policy_hash if call.shell is not None else policy_hash,
        "mode": call.mode,
        "trust": trust,
        "approved_by": call.approved_by,
        "decided_by": call.decided_by if call.approved_by is None else None,
        "exit_code": _exit_code(spec, raw, err),
        "truncated": bool(raw.get("truncated", False)),
        "error_category": category if isinstance(category, str) else None,
        "error": record.error["message"] if record.error is not None else None,
        "caller": call.caller,
        "caller_id": caller_id(session),
        "phase": call.phase,
        "gates": scrub(call.gates) if call.gates else None,  # paths, a judge's words
        "adversarial_policy_decision": _judged(call.gates),
        "attempts": call.attempts,
        "cached": call.cached,
        "output": call.output,
        "duration_ms": round((call.ended - call.started) * 1000, 3),
        "rules_hash": policy_hash,
        "shell_policy": _shell(call.shell),
    }


def _judged(gates: dict[str, Any]) -> str | None:
    found = gates.get("adversarial_policy")
    return found.get("verdict") if isinstance(found, dict) else None


def _shell(decision: ShellDecision | None) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {"verdict": decision.verdict, "rules": list(decision.rules),
            "reasons": [scrub(r) for r in decision.reasons]}


def _exit_code(spec: ToolSpec | None, raw: dict[str, Any], err: ToolError | None) -> int | None:
    if spec is None or spec.kind != "execute":
        return None
    code = raw.get("exit_code")
    if isinstance(code, int):
        return code
    if err is not None and err.category is ErrorCategory.POLICY_BLOCKED:
        return POLICY_EXIT
    return NO_STATUS


def failed_result(call: Call, err: ToolError, record: ToolInvocationRecord) -> CallResult:
    return CallResult(
        call.id, call.name, err.format_for_model(), err, call.started, call.ended,
        failed=True, record=record,
    )
