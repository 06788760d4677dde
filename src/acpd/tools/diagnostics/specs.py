"""`diagnostics` (core__diagnostics): run the workspace's checkers, return what they found.

Rules and limits:
- Checkers: cargo check, cargo clippy, ruff, mypy, tsc, eslint; detected from the workspace
  root (checkers.py) or fixed by `[tools.diagnostics] checkers`, or one named in the call.
- They run project code (cargo build scripts and proc macros, eslint and mypy plugins from
  the project's config), so each command line goes through the shell policy exactly as a bash
  command would (`ToolSpec.commands`: a deny denies the call, an ask asks), then through the
  session's command runner: the same sandbox, environment hygiene, process group and
  timeout (`timeout_secs`) as bash. The tool is `state_change` (checkers write caches and
  build artefacts): ask mode asks, read-only mode does not offer it.
- A checker that is not installed gives no diagnostics and a warning, never an error; one
  that fails without diagnostics (a crash, a config error) adds a warning quoting its output.
- At most `max_diagnostics` come back, errors first; the result says when it cut, and how
  many there were. Each diagnostic is {severity, message, file, line, col, rule, source};
  the card's locations are the shown diagnostics' files and lines.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.capabilities import CommandRequest
from acpd.tools.diagnostics.checkers import ORDER, checker, detect, find_program
from acpd.tools.diagnostics.config import CheckerName, DiagnosticsConfig
from acpd.tools.diagnostics.parsers import Diagnostic
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

if TYPE_CHECKING:
    from acpd.tools.capabilities import Cleanup, CommandResult

MAX_LOCATIONS = 50
LOGGED_RESULT = ("count", "shown", "capped", "checkers", "warnings")


class DiagnosticsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checker: CheckerName | None = Field(
        None, description="Run only this checker (default: those the workspace configures)")


def planned(args: DiagnosticsParams | dict[str, Any], root: str,
            config: DiagnosticsConfig) -> list[CheckerName]:
    one = args.get("checker") if isinstance(args, dict) else args.checker
    if one is not None:
        return [one] if one in ORDER else []
    return list(config.checkers) or detect(root)


def commands(config: DiagnosticsConfig) -> Any:
    """The command lines a call will run (those whose program exists), for the policy."""

    def lines(args: dict[str, Any], cwd: str) -> list[str]:
        found = []
        for name in planned(args, cwd, config):
            spec = checker(name, cwd)
            program = find_program(spec.program, cwd)
            if program is not None:
                found.append(spec.command(program))
        return found

    return lines


class DiagnosticsTool:
    def __init__(self, config: DiagnosticsConfig) -> None:
        self.config = config

    async def __call__(self, args: DiagnosticsParams, ctx: ToolContext) -> ToolOutput:
        root = ctx.cwd
        names = planned(args, root, self.config)
        found: list[Diagnostic] = []
        warnings: list[str] = []
        ran: list[str] = []
        if not names:
            warnings.append("no checker is configured in this workspace (Cargo.toml, ruff or "
                            "mypy config, tsconfig.json, eslint config); name one with "
                            "`checker`")
        for name in names:
            spec = checker(name, root)
            program = find_program(spec.program, root)
            if program is None:
                warnings.append(f"{name}: {spec.program} is not installed; skipped")
                continue
            result = await self._run(spec.command(program), ctx)
            diags = spec.parse(result.output)
            ran.append(name)
            warnings += _run_warnings(name, result, diags, self.config.timeout_secs)
            found += diags
        return self._output(root, found, ran, warnings)

    async def _run(self, command: str, ctx: ToolContext) -> CommandResult:
        async def on_terminal(_terminal_id: str, release: Cleanup) -> None:
            ctx.defer(release)

        async def on_output(_text: str) -> None:
            return None

        request = CommandRequest(command, ctx.cwd, self.config.timeout_secs,
                                 ctx.output_byte_limit, roots=ctx.roots)
        try:
            return await ctx.runner.run(request, on_terminal, on_output)
        except OSError as exc:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            f"cannot start {command.split()[0]}: {exc}") from None

    def _output(self, root: str, found: list[Diagnostic], ran: list[str],
                warnings: list[str]) -> ToolOutput:
        found = [_absolute(d, root) for d in found]
        found.sort(key=lambda d: {"error": 0, "warning": 1}.get(d.severity, 2))
        limit = self.config.max_diagnostics
        shown = found[:limit]
        errors = sum(d.severity == "error" for d in found)
        head = (f"{len(found)} diagnostics ({errors} errors, {len(found) - errors} other) from "
                f"{', '.join(ran) or 'no checker'}")
        if len(found) > limit:
            head += f"; showing the first {limit} (max_diagnostics): {len(found) - limit} more"
        lines = [head, *(_line(d, root) for d in shown)]
        lines += [f"warning: {w}" for w in warnings]
        raw = {"diagnostics": [d.to_json() for d in shown], "count": len(found),
               "shown": len(shown), "capped": len(found) > limit, "checkers": ran,
               "warnings": warnings}
        located = list(dict.fromkeys((d.file, d.line) for d in shown if d.file))
        return ToolOutput("\n".join(lines), raw=raw, locations=located[:MAX_LOCATIONS])


def _absolute(diag: Diagnostic, root: str) -> Diagnostic:
    if not diag.file or os.path.isabs(diag.file):
        return diag
    from dataclasses import replace

    return replace(diag, file=os.path.normpath(os.path.join(root, diag.file)))


def _line(d: Diagnostic, root: str) -> str:
    path = os.path.relpath(d.file, root) if d.file.startswith(root.rstrip("/") + "/") \
        else d.file
    where = ":".join(str(x) for x in (path, d.line, d.col) if x is not None)
    rule = f" [{d.rule}]" if d.rule else ""
    return f"{where}: {d.severity}{rule}: {d.message}"


def _run_warnings(name: str, result: CommandResult, diags: list[Diagnostic],
                  timeout: float) -> list[str]:
    notes = []
    if result.timed_out:
        notes.append(f"{name} did not finish in {timeout:g} s and was stopped; its "
                     "diagnostics may be incomplete")
    elif not diags and result.exit_code not in (0, None):
        tail = result.output.strip()[-300:].replace("\n", " | ")
        notes.append(f"{name} exited {result.exit_code} without diagnostics: {tail}")
    if result.truncated:
        notes.append(f"{name}'s output was cut at the output limit; some diagnostics are "
                     "missing")
    return notes


def make_diagnostics_specs(config: DiagnosticsConfig | None = None) -> list[ToolSpec]:
    config = config or DiagnosticsConfig()
    return [ToolSpec(
        id="core__diagnostics", name="diagnostics",
        description="Run the project's checkers (cargo check/clippy, ruff, mypy, tsc, eslint; "
        "detected from the workspace) and return their diagnostics: severity, message, "
        "file, line, col, rule.",
        params=DiagnosticsParams, effect=Effect.STATE_CHANGE, kind="execute",
        execute=DiagnosticsTool(config),
        title=lambda a: f"Diagnostics ({a.checker})" if a.checker else "Diagnostics",
        redaction=redaction(("checker",), LOGGED_RESULT), retry_safe=False,
        commands=commands(config),
    )]
