"""The shell policy as the runner sees it: one `PolicyHandle` per plugin set, trust per workspace,
hot reload as a background task of the editor's connection.

A workspace's plugin set is the configured plugin directories, plus `<cwd>/.acpd/plugins` when
the workspace is trusted (an untrusted checkout must not be able to ship its own overlays; they
could only tighten, but a trusted one is the only kind whose files we act on). Every session on
the same set shares one handle, and so do the editor-terminal and the local execution paths:
the runner judges before it knows where the command will run.

`acpd.policy` is imported here lazily, on the first bash decision: the handle's first build
compiles the policy and checks its rule examples, which loads tree-sitter, and none of that may
happen before `initialize` is answered.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

if TYPE_CHECKING:
    from acpd.policy.decision import Decision
    from acpd.policy.engine import CompiledPolicy
    from acpd.policy.reload import PolicyHandle, ReloadReport
    from acpd.tools.spec import ToolSpec

log = logging.getLogger("acpd.shellpolicy")

SHELL_TOOL = "core__bash"
INLINE_JUDGE_CHARS = 512
"""Command lines up to this long are judged on the event loop (well under a millisecond);
longer ones on a worker thread."""
WORKSPACE_PLUGINS = (".acpd", "plugins")
TrustLevel = Literal["untrusted", "provisional", "trusted"]
StartSoon = Callable[[Callable[[], Awaitable[None]]], None]
Notify = Callable[[str, Any], Awaitable[None]]
Watcher = Callable[[anyio.Event], Awaitable[None]]
"""A background reload loop that runs until the event is set."""


@dataclass(frozen=True, slots=True)
class ShellPolicySettings:
    policy_file: Path | None = None
    trust: TrustLevel = "provisional"
    trusted_workspaces: tuple[str, ...] = ()
    plugin_dirs: tuple[Path, ...] = ()
    debounce_ms: int = 50


def under(path: str, root: str) -> bool:
    """`path` is `root` or inside it (both made real first: a symlink cannot smuggle trust)."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip("/") + "/")


@dataclass(eq=False)
class _Entry:
    handle: PolicyHandle
    stop: anyio.Event | None = None
    watching: bool = False
    notices: dict[str, str] = field(default_factory=dict)
    """Session id -> an error line owed to it: the policy kept its last good version."""
    sessions: set[str] = field(default_factory=set)


class ShellPolicies:
    """The daemon's shell policy handles, by plugin set."""

    def __init__(self, settings: ShellPolicySettings) -> None:
        self.settings = settings
        self._entries: dict[tuple[str, ...], _Entry] = {}
        self._build_lock = threading.Lock()
        self._start_soon: StartSoon | None = None
        self._notify: Notify | None = None
        self._closed = False
        self._watchers: list[Watcher] = []
        self._watchers_stop: anyio.Event | None = None
        self._config_notice: str | None = None
        self._config_told: set[str] = set()

    # --- per workspace ----------------------------------------------------------------------

    def trust_for(self, cwd: str) -> TrustLevel:
        if any(under(cwd, root) for root in self.settings.trusted_workspaces):
            return "trusted"
        return self.settings.trust

    def plugin_dirs_for(self, cwd: str) -> tuple[Path, ...]:
        dirs = list(self.settings.plugin_dirs)
        if self.trust_for(cwd) == "trusted":
            dirs.append(Path(os.path.realpath(cwd)).joinpath(*WORKSPACE_PLUGINS))
        return tuple(dirs)

    def _key(self, cwd: str) -> tuple[str, ...]:
        config = str(self.settings.policy_file) if self.settings.policy_file else ""
        return (config, *(str(p) for p in self.plugin_dirs_for(cwd)))

    async def handle_for(self, cwd: str, session_id: str = "") -> PolicyHandle:
        """The shared handle of `cwd`'s plugin set, built (off the loop) on first use."""
        key = self._key(cwd)
        entry = self._entries.get(key)
        if entry is None:
            entry = await anyio.to_thread.run_sync(self._build, key, cwd)
        if session_id:
            entry.sessions.add(session_id)
        self._watch(entry)
        return entry.handle

    def _build(self, key: tuple[str, ...], cwd: str) -> _Entry:
        from acpd.policy.reload import PolicyHandle

        with self._build_lock:  # two sessions starting at once build it once
            entry = self._entries.get(key)
            if entry is None:
                handle = PolicyHandle(self.settings.policy_file, self.plugin_dirs_for(cwd))
                entry = self._entries[key] = _Entry(handle)
                if handle.last_report.errors:
                    log.warning("shell policy loaded with errors: %s",
                                "; ".join(handle.last_report.errors))
        return entry

    async def judge(self, command: str, *, cwd: str, roots: tuple[str, ...],
                    session_id: str = "") -> Decision:
        """The policy's decision for `command`; a policy that cannot judge denies. Sandboxed
        (bubblewrap here), a verdict the sandbox lifted holds only when the profile built for
        the command is complete; else the unsandboxed verdict stands (docs/policy.md)."""
        from acpd.policy.decision import RANK, Decision

        try:
            handle = await self.handle_for(cwd, session_id)
            judge = functools.partial(handle.judge, command, cwd=cwd, roots=roots,
                                      trust=self.trust_for(cwd))
            sandboxed = confined()
            decision = await _judged(judge, command, sandboxed)
            if not sandboxed or decision.verdict == "deny":
                return decision
            plain = await _judged(judge, command, False)
            if RANK[plain.verdict] <= RANK[decision.verdict]:
                return decision  # the sandbox lifted nothing: nothing to check
            # The sandbox-only allows hold only for a profile that enforces every rule: built
            # now, as the runner will build it (the walk's findings are reused while the disk
            # is unchanged, so the runner's own build costs little more).
            gap = await anyio.to_thread.run_sync(incomplete_sandbox, handle.current, cwd, roots)
            if gap is not None:
                return _without_sandbox(plain, gap)
            return dataclasses.replace(decision, sandbox_lifted=True)
        except Exception as exc:  # fail closed: a broken policy must not let commands through
            log.exception("the shell policy could not judge a command")
            reason = f"the shell policy could not judge this command ({type(exc).__name__}: {exc})"
            return Decision("deny", (reason[:500],), ("policy.error",), "")

    async def judge_network(self, *, cwd: str, session_id: str = "") -> Decision | None:
        """None when the policy for `cwd` has `allow_network = true`, else a deny (a policy
        that cannot be read denies too)."""
        from acpd.policy.decision import Decision

        try:
            policy = (await self.handle_for(cwd, session_id)).current
        except Exception as exc:  # fail closed, as for commands
            log.exception("the shell policy could not judge a network tool")
            return Decision("deny", (f"the shell policy could not be read ({exc})"[:500],),
                            ("policy.error",), "")
        if policy.settings.allow_network:
            return None
        return Decision("deny", ("it reaches the network and the policy has allow_network = "
                                 "false",), ("network",), policy.hash)

    # --- hot reload -------------------------------------------------------------------------

    def attach(self, start_soon: StartSoon, notify: Notify) -> None:
        """Watch for changes from now on, as background tasks of the editor's connection;
        each reload outcome goes to `notify("_acpd/policy_reloaded", params)`."""
        self._start_soon, self._notify = start_soon, notify
        for entry in self._entries.values():
            self._watch(entry)
        if self._watchers_stop is None and not self._closed:
            self._watchers_stop = anyio.Event()
            for watcher in self._watchers:
                self._start_watcher(watcher)

    def add_watcher(self, watcher: Watcher) -> None:
        """Another hot-reload loop to run beside the policy watchers (the output filters'):
        `attach`, which the daemon calls once its runtime is loaded, starts it as a
        background task of the connection, and `close` stops it with the others."""
        self._watchers.append(watcher)
        if self._watchers_stop is not None and not self._closed:
            self._start_watcher(watcher)

    def _start_watcher(self, watcher: Watcher) -> None:
        stop = self._watchers_stop
        assert self._start_soon is not None and stop is not None

        async def run() -> None:
            try:
                await watcher(stop)
            except Exception:  # the daemon goes on with what it has
                log.exception("a reload watcher stopped")

        self._start_soon(run)

    def _watch(self, entry: _Entry) -> None:
        if entry.watching or self._start_soon is None or self._closed:
            return
        entry.watching = True
        entry.stop = anyio.Event()
        self._start_soon(lambda: self._watch_loop(entry))

    async def _watch_loop(self, entry: _Entry) -> None:
        from acpd.policy.watch import watch_paths

        assert entry.stop is not None
        targets = entry.handle.watch_targets()
        try:
            # The first (empty) batch comes once the watch is in place: a change made between
            # the handle's build and that instant is caught by `astale` (issue 9, item 6).
            async for changes in watch_paths(targets, debounce_ms=self.settings.debounce_ms,
                                             stop_event=entry.stop, ready=True):
                if not changes and not await entry.handle.astale():
                    continue
                before = entry.handle.current
                report = await entry.handle.arebuild()
                await self._reported(entry, report, before)
        except Exception:  # the daemon goes on with the last good policy
            log.exception("the shell policy watcher stopped")
        finally:
            entry.watching = False

    async def _reported(
        self, entry: _Entry, report: ReloadReport, before: CompiledPolicy | None = None
    ) -> None:
        params = reload_params(report)
        if report.kept_last_good and report.errors:
            line = ("The shell policy was not fully reloaded; the last good version stays in "
                    "force: " + "; ".join(report.errors))[:2000]
            for session_id in entry.sessions:
                entry.notices[session_id] = line
        else:
            # A change is told in words too (tools/policy_change.py), owed to each session.
            told = _changed_line(before, entry.handle.current) if report.changed else None
            for session_id in entry.sessions:
                entry.notices.pop(session_id, None)
                if told is not None:
                    entry.notices[session_id] = told
            if told is not None:
                params["summary"] = told
        if self._notify is not None:
            await self._notify("_acpd/policy_reloaded", params)

    def forget(self, session_id: str) -> None:
        """The session is over: it is owed no notice and is told of no later reload (each
        entry's sessions only grew, and a broken reload wrote a notice for every session
        ever seen)."""
        for entry in self._entries.values():
            entry.sessions.discard(session_id)
            entry.notices.pop(session_id, None)
        self._config_told.discard(session_id)

    def take_notice(self, session_id: str) -> str | None:
        """The error lines owed to a session (once), shown to it at its next turn."""
        lines = []
        for entry in self._entries.values():
            line = entry.notices.pop(session_id, None)
            if line is not None:
                lines.append(line)
                break
        if self._config_notice is not None and session_id not in self._config_told:
            self._config_told.add(session_id)
            lines.append(self._config_notice)
        return "\n\n".join(lines) if lines else None

    async def config_reloaded(self, params: dict[str, Any], notice: str | None) -> None:
        """Another part of the policy (config.toml's permission rules) was reloaded: announce
        it like a policy reload; `notice` (None: all is well again) is owed to every session,
        once, at its next prompt."""
        self._config_notice = notice
        self._config_told = set()
        if self._notify is not None:
            await self._notify("_acpd/policy_reloaded", params)

    def close(self) -> None:
        """Stop every watcher (the connection is ending)."""
        self._closed = True
        for entry in self._entries.values():
            if entry.stop is not None:
                entry.stop.set()
        if self._watchers_stop is not None:
            self._watchers_stop.set()

    def handles(self) -> Sequence[PolicyHandle]:
        return [entry.handle for entry in self._entries.values()]


def _changed_line(before: CompiledPolicy | None, after: CompiledPolicy) -> str | None:
    if before is None or before.hash == after.hash:
        return None
    from acpd.tools.policy_change import describe_change

    return describe_change(before.policy, after.policy, before.hash, after.hash)


def reload_params(report: ReloadReport) -> dict[str, Any]:
    """The `_acpd/policy_reloaded` notification: the brief's `hash` plus the rest."""
    return {"hash": report.policy_hash, "sources": list(report.sources),
            "errors": list(report.errors), "changed": report.changed,
            "keptLastGood": report.kept_last_good}


class _Env(Protocol):
    cwd: str
    roots: tuple[str, ...]
    session_id: str


async def _judged(judge: Callable[..., Decision], command: str, sandboxed: bool) -> Decision:
    if len(command) <= INLINE_JUDGE_CHARS:
        return judge(sandboxed=sandboxed)
    # A long command line can take up to the policy's time budget (50 ms): judge it on a
    # worker thread so that other sessions' messages are not held up meanwhile.
    return await anyio.to_thread.run_sync(functools.partial(judge, sandboxed=sandboxed))


def incomplete_sandbox(policy: Any, cwd: str, roots: tuple[str, ...]) -> str | None:
    """Why the kernel sandbox built for a command in `cwd` would not enforce every path rule
    (the workspace walk's bound, a denied file's other name outside the roots, more masks
    than bubblewrap takes), or None when it would. Reads the disk: call off the loop."""
    from acpd.sandbox.build import build_confinement
    from acpd.sandbox.rules import PathRules as SandboxRules

    try:
        conf = build_confinement(roots or (cwd,), SandboxRules.of(policy), cwd=cwd)
    except ValueError:
        return None  # no root exists: the runner refuses the command itself
    if conf.complete:
        return None
    return "; ".join(conf.notes)[:400] or "the sandbox profile is incomplete"


def _without_sandbox(plain: Decision, gap: str) -> Decision:
    """The decision when the sandbox cannot be counted on: the unsandboxed one, saying why."""
    from acpd.policy.decision import Decision

    reason = f"the kernel sandbox cannot enforce every path rule here ({gap})"
    return Decision(plain.verdict, (*plain.reasons, reason), (*plain.rules, "sandbox.incomplete"),
                    plain.policy_hash)


def confined() -> bool:
    """Will bash commands run inside the kernel sandbox? Both runners (editor terminal and
    local) confine every command when it is available, so the decision may count on it. Only
    bubblewrap qualifies: the policy then relies on its PID namespace (every process dies with
    the command) as well as on its file and network rules, which sandbox-exec does not give."""
    from acpd.sandbox.status import sandbox_status

    status = sandbox_status()
    return status.available and status.kind == "bwrap"


async def judge_call(shell: ShellPolicies | None, spec: ToolSpec, args: dict[str, Any],
                     env: _Env) -> Decision | None:
    """The shell policy's decision for a bash call, its network gate for a network tool, and
    its path rules' decision for a file tool call (None when every path is allowed, so the
    mode and the rules decide as for any call); None for other tools (or no policy)."""
    if spec.network:
        if shell is None:  # no policy to say allow_network = true: fail closed
            from acpd.policy.decision import Decision

            return Decision("deny", ("no shell policy allows network access",), ("network",), "")
        return await shell.judge_network(cwd=env.cwd, session_id=env.session_id)
    if shell is None:
        return None
    if spec.commands is not None:
        from acpd.tools.commandpolicy import judge_commands

        return await judge_commands(shell, spec, args, env)
    command = args.get("command")
    if spec.id == SHELL_TOOL and isinstance(command, str):
        return await shell.judge(command, cwd=env.cwd, roots=env.roots,
                                 session_id=env.session_id)
    from acpd.tools.fs.pathguard import PATH_ARGS, prejudge

    if spec.id not in PATH_ARGS:
        return None
    from acpd.policy.decision import Decision

    try:
        handle = await shell.handle_for(env.cwd, env.session_id)
        return prejudge(handle.current, spec.id, args, env.cwd, env.roots)
    except Exception as exc:  # fail closed, as for bash
        log.exception("the path policy could not judge a file tool call")
        reason = f"the path policy could not judge this call ({type(exc).__name__}: {exc})"
        return Decision("deny", (reason[:500],), ("policy.error",), "")
