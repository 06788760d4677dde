"""Slash commands: run a tool directly through the same pipeline, or ask the daemon itself.

They work with or without a model. Without one (direct mode) they are the only way in, and
anything else gets a short note on how to configure a model.
"""

from __future__ import annotations

import shlex
import uuid
from typing import TYPE_CHECKING

import orjson

from acpd.protocol import acp

if TYPE_CHECKING:
    from acpd.daemon.session import Session
    from acpd.tools.errors import ToolError
    from acpd.tools.pipeline import CallEnv, ToolPipeline
    from acpd.tools.spec import ToolSpec

NO_MODEL = (
    "No model is configured, so acpd runs in direct mode: start a prompt with `/` to run a "
    "tool (`/bash ls`, `/read README.md`, `/list_directory src`, `/tools`). To chat with a "
    "model, pick one in the model menu, start acpd with `--model openai:NAME`, "
    "`anthropic:NAME` or `scripted:PATH`, or set `[agent] model` in the config file."
)

BUILTIN = {
    "tools": "List the tools and their effects",
    "status": "Show the session, its mode and model",
    "policy": "Show what runs without asking in this mode",
    "clear": "Forget the conversation so far (the log stays)",
    "unblock": "Lift the block the failure detector put on a tool: /unblock TOOL",
    "undo": "Undo the files a tool call changed: /undo (the last), /undo CALL_ID, /undo list",
}
HINTS = {"undo": "list, or a call id (blank: the last call)"}


def commands(pipeline: ToolPipeline) -> list[acp.AvailableCommand]:
    """The built-in commands, then one per enabled tool (a tool that is not enabled is never
    offered; one the mode denies is, and says so when run)."""
    listed = [
        acp.AvailableCommand(
            name=name, description=d, input={"hint": HINTS[name]} if name in HINTS else None
        )
        for name, d in BUILTIN.items()
        if name != "undo" or pipeline.checkpoints is not None
    ]
    for spec in pipeline.registry:
        if not pipeline.policy.is_enabled(spec):
            continue
        name = pipeline.registry.name_of(spec)
        hint = _primary_field(spec) or "JSON arguments"
        listed.append(
            acp.AvailableCommand(
                name=name, description=f"Run the {name} tool: {spec.description}",
                input={"hint": hint},
            )
        )
    return listed


async def run_slash(
    text: str, session: Session, pipeline: ToolPipeline, env: CallEnv, model: str | None
) -> None:
    name, _, rest = text[1:].partition(" ")
    rest = rest.strip()
    if name == "undo":
        await session.say(await _undo(rest, pipeline, env))
        return
    if name in BUILTIN:
        await session.say(_builtin(name, rest, session, pipeline, env, model))
        return
    spec = pipeline.registry.resolve(name)
    if spec is None:
        await session.say(f"Unknown command /{name}. Try /tools.")
        return
    arguments, problem = parse_arguments(spec, rest)
    if problem is not None:
        await session.say(problem)
        return
    call_id = f"tc_{uuid.uuid4().hex[:20]}"
    result = await pipeline.run(call_id, spec.id, arguments, env, caller="slash")
    if result.error is not None:
        await session.say(_failure(spec, result.error))


def _failure(spec: ToolSpec, error: ToolError) -> str:
    """What a slash command's failure says to the user who typed it (not to a model)."""
    from acpd.tools.errors import ErrorCategory
    from acpd.tools.pipeline import USER_DECLINED

    if error.message == USER_DECLINED:
        return f"You declined /{spec.name}: nothing ran."
    if error.category in (ErrorCategory.INVALID_PARAMETERS, ErrorCategory.TYPE_MISMATCH):
        return f"/{spec.name}: {error.message}\n{usage(spec)}"
    return error.format_for_model()


async def _undo(rest: str, pipeline: ToolPipeline, env: CallEnv) -> str:
    if pipeline.checkpoints is None:
        return "Checkpoints are off ([tools.checkpoint] enabled = false, or no data dir)."
    from acpd.checkpoint.commands import slash_undo

    return await slash_undo(rest, pipeline.checkpoints, env, pipeline.audit)


def parse_arguments(spec: ToolSpec, rest: str) -> tuple[dict[str, object], str | None]:
    """`/tool {"json": ...}`, or the rest of the line as the tool's main string argument."""
    if rest.startswith("{"):
        try:
            value = orjson.loads(rest)
        except orjson.JSONDecodeError as exc:
            return {}, f"Those arguments are not valid JSON: {exc.msg}"
        if not isinstance(value, dict):
            return {}, "JSON arguments must be an object."
        return value, None
    field = _primary_field(spec)
    required = spec.input_schema().get("required", [])
    if field is None or any(name != field for name in required):
        # `/write b.txt hi` cannot say which words are the path and which the content.
        return {}, usage(spec)
    if not rest:
        return ({}, usage(spec)) if field in required else ({}, None)
    return {field: rest}, None


def usage(spec: ToolSpec) -> str:
    """`Usage: /read <path>` for a tool with at most one required argument, a string; else
    the JSON form with every required argument."""
    schema = spec.input_schema()
    required = [str(name) for name in schema.get("required", [])]
    field = _primary_field(spec)
    if field is not None and all(name == field for name in required):
        return f"Usage: /{spec.name} <{field}>"
    props = schema.get("properties", {})
    example = ", ".join(
        f'"{name}": {_placeholder(props.get(name, {}), name)}' for name in required
    )
    return f"Usage: /{spec.name} {{{example}}} (JSON arguments; see /tools)"


def _placeholder(prop: dict[str, object], name: str) -> str:
    kind = prop.get("type")
    if kind == "string":
        return f'"<{name}>"'
    return f"<{kind if isinstance(kind, str) else 'value'}>"


def _primary_field(spec: ToolSpec) -> str | None:
    schema = spec.input_schema()
    for name, prop in schema.get("properties", {}).items():
        if prop.get("type") == "string":
            return str(name)
    return None


def _builtin(
    name: str, rest: str, session: Session, pipeline: ToolPipeline, env: CallEnv,
    model: str | None,
) -> str:
    if name == "tools":
        catalog = {s.id for _, s in pipeline.catalog(env.mode, env.state)}
        extra = env.state.extra.tools() if env.state.extra is not None else []  # MCP tools
        lines = [
            f"- {pipeline.registry.name_of(s)} ({s.id}, {s.effect.value})"
            + ("" if s.id in catalog else f" — {_hidden_why(pipeline, s, env)}")
            for s in [*pipeline.registry, *extra]
        ]
        return "Tools:\n" + "\n".join(lines)
    if name == "unblock":
        spec = pipeline.registry.resolve(rest.strip())
        if spec is None:
            return "Usage: /unblock TOOL (see /tools)"
        if env.state.anomaly.unblock(spec.id):
            return f"Unblocked {rest.strip()}: the model may call it again."
        return f"{rest.strip()} was not blocked."
    if name == "status":
        gates = pipeline.gates.status(model)  # tools/gates: a line per gate that is on
        return (
            f"Session {session.id}\nworkspace: {session.cwd}\nmode: {session.mode}\n"
            f"model: {model or 'none (direct mode)'}\nmessages: {len(session.history)}\n"
            + env.state.catalog.status_line()
        ) + gates
    if name == "policy":
        remembered = ", ".join(
            sorted(f"{shlex.quote(k)}={'allow' if v else 'reject'}"
                   for k, v in session.approvals.answers.items())
        ) or "none"
        quota = env.state.quota
        limit = "unlimited" if quota.limit is None else f"{quota.used}/{quota.limit} used"
        return (
            f"Mode {env.mode}: read-only tools always run; "
            + {
                "read-only": "tools that change state are denied and hidden.",
                "ask": "tools that change state or run commands ask first.",
                "auto": "tools that change state or run commands run without asking.",
            }.get(env.mode, "")
            + f"\nRemembered answers: {remembered}\nWorkspace roots: {', '.join(session.roots)}"
            + f"\nTool calls: {limit}\nPolicy hash: {pipeline.policy.policy_hash(env.mode)}"
        )
    session.history.clear()
    session.store.clear_messages(session.id)
    env.state.clear()
    return "Cleared the conversation; the model starts afresh on your next prompt."


def _hidden_why(pipeline: ToolPipeline, spec: ToolSpec, env: CallEnv) -> str:
    if not pipeline.policy.is_enabled(spec):
        return "not enabled"
    blocked = env.state.anomaly.is_blocked(spec.id)
    if blocked is not None:
        return f"blocked ({blocked}); /unblock {pipeline.registry.name_of(spec)}"
    return "hidden in this mode" if pipeline.policy.visible(spec, "auto") else "denied by a rule"
