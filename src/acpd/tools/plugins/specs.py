"""Plugin tools as ToolSpecs (id `plugin__<tool_name>`), run through the one pipeline.

Effects: a native tool is `state_change` (it is a program with bash's sandbox: it may write
the workspace), so ask mode asks and read-only mode hides it; a WASI tool is `read_only`
unless it has a writable mount (`state_change`); a tool that `requires_network` is
`external_side_effect` and `network`, so the shell policy's `allow_network` must also be
true. Every argument the manifest declares is logged (through the secret scanner); the
result keeps `ok`, `exit_code` and `sandbox`.

Before a WASI call, each mount is resolved (`{workspace}` is the session's cwd) and refused
when it holds a file the policy's deny_read protects: a preopened directory exposes its whole
tree, so it must not contain what `read` and bash are kept from.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.plugins.catalog import PREFIX, PluginSettings
from acpd.tools.plugins.files import WORKSPACE
from acpd.tools.plugins.protocol import decode_reply, encode_request
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic import BaseModel

    from acpd.sandbox.rules import PathRules
    from acpd.tools.plugins.manifest import PluginTool
    from acpd.tools.plugins.wasi import Preopen
    from acpd.tools.shellpolicy import ShellPolicies

LOGGED_RESULT = ("ok", "exit_code", "sandbox")


def effect_of(tool: PluginTool) -> Effect:
    if tool.manifest.requires_network:
        return Effect.EXTERNAL_SIDE_EFFECT
    if tool.manifest.native or tool.writable_mounts:
        return Effect.STATE_CHANGE
    return Effect.READ_ONLY


class PluginRunner:
    """Runs one plugin tool (native or WASI) for the pipeline."""

    def __init__(self, tool: PluginTool, settings: PluginSettings,
                 shell: ShellPolicies | None) -> None:
        self.tool, self.settings, self.shell = tool, settings, shell

    async def __call__(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        tool, m = self.tool, self.tool.manifest
        payload: dict[str, Any] = args.model_dump(exclude_none=True)
        rules = await self._rules(ctx.cwd)
        if m.native:
            from acpd.tools.plugins.native import run_native

            request = encode_request(ctx.tool_call_id, tool.name, payload, ctx.cwd)
            native = await run_native(
                tool.name, tool.entry, request, cwd=ctx.cwd, roots=ctx.roots or (ctx.cwd,),
                rules=rules, runtime_ms=m.max_runtime_ms, stdout_cap=m.max_stdout_bytes,
                stderr_cap=m.max_stderr_bytes)
            stdout, stderr, code, sandbox = (native.stdout, native.stderr, native.exit_code,
                                             native.sandbox)
        else:
            from acpd.tools.plugins.wasi import run_wasi

            preopens = await self._preopens(ctx.cwd, rules)
            guest_cwd = next((p.guest for p in preopens if p.host == _real(ctx.cwd)), "/")
            request = encode_request(ctx.tool_call_id, tool.name, payload, guest_cwd)
            wasi = await run_wasi(tool.name, tool.entry, request, preopens,
                                  runtime_ms=m.max_runtime_ms, stdout_cap=m.max_stdout_bytes,
                                  stderr_cap=m.max_stderr_bytes)
            stdout, stderr, code, sandbox = wasi.stdout, wasi.stderr, wasi.exit_code, "wasi"
        return self._output(stdout, stderr, code, sandbox)

    def _output(self, stdout: bytes, stderr: str, code: int | None, sandbox: str
                ) -> ToolOutput:
        try:
            reply = decode_reply(self.tool.name, stdout)
        except ToolError as err:
            if stderr.strip():
                err.message += f"; stderr: {stderr.strip()[-500:]}"
            if code:
                err.message += f"; exit code {code}"
            raise
        raw = {"ok": reply.ok, "exit_code": code, "sandbox": sandbox, "data": reply.data,
               "stderr": stderr[-4000:]}
        text = reply.output if reply.ok else f"error: {reply.output}"
        return ToolOutput(text, raw=raw, failed=not reply.ok)

    async def _rules(self, cwd: str) -> PathRules:
        from acpd.sandbox.rules import PathRules

        if self.shell is None:
            return PathRules()
        handle = await self.shell.handle_for(cwd)
        rules = PathRules.of(handle.current)
        preset = self.settings.preset
        network = (rules.allow_network and self.tool.manifest.requires_network
                   and preset is not None and preset.allow_network)
        return dataclasses.replace(rules, allow_network=network)

    async def _preopens(self, cwd: str, rules: PathRules) -> list[Preopen]:
        import anyio.to_thread

        from acpd.tools.plugins.wasi import Preopen

        mounts = []
        for mount in self.tool.manifest.mounts:
            host = mount.host
            if host == WORKSPACE or host.startswith(WORKSPACE + "/"):
                host = cwd + host[len(WORKSPACE):]
            else:
                host = os.path.join(self.tool.folder, host)
            mounts.append(Preopen(host, mount.guest, mount.read_only))
        return await anyio.to_thread.run_sync(_checked, self.tool.name, mounts, rules)


def _real(path: str) -> str:
    return os.path.realpath(path)


def _checked(name: str, mounts: list[Preopen], rules: PathRules) -> list[Preopen]:
    """The mounts with real host paths. Raises ToolError: PermanentFailure for a mount that
    is not a directory, PolicyBlocked for one whose tree holds something deny_read protects
    (the sandbox's own walk finds them, as it does to mask them for bash)."""
    from acpd.sandbox.build import build_confinement
    from acpd.tools.plugins.wasi import Preopen

    real = []
    for mount in mounts:
        host = _real(mount.host)
        if not os.path.isdir(host):
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            f"plugin {name}: mount {mount.host} is not a directory")
        real.append(Preopen(host, mount.guest, mount.read_only))
    mounts = real
    if not rules.deny_read:
        return mounts

    for mount in mounts:
        conf = build_confinement((mount.host,), rules, cwd=mount.host)
        hidden = [*conf.mask_files, *conf.mask_dirs]
        inside = [p for p in hidden if p == mount.host or p.startswith(mount.host + "/")]
        if inside or not conf.complete:
            what = inside[0] if inside else "(the walk did not finish)"
            raise ToolError(ErrorCategory.POLICY_BLOCKED,
                            f"plugin {name}: mount {mount.host} holds {what}, which deny_read "
                            "protects; mount a directory without such files")
    return mounts


def _title(name: str) -> Callable[[Any], str]:
    def title(_args: Any) -> str:
        return f"{name} (plugin)"

    return title


def make_spec(tool: PluginTool, settings: PluginSettings,
              shell: ShellPolicies | None) -> ToolSpec:
    m = tool.manifest
    kind_word = "native" if m.native else "WASI"
    return ToolSpec(
        id=PREFIX + m.tool_name,
        name=m.tool_name,
        description=f"{m.description} (plugin tool {m.tool_name} {m.version}, {kind_word})",
        params=tool.params, effect=effect_of(tool), kind="other",
        execute=PluginRunner(tool, settings, shell),
        title=_title(m.tool_name),
        redaction=redaction(tuple(m.args.properties), LOGGED_RESULT),
        retry_safe=False, network=m.requires_network,
    )
