"""How a runner confines one bash command: the glue between a `CommandRequest` and the
sandbox package (which knows nothing of requests, policies or the daemon).

`confine` runs per command and off the event loop (the workspace walk reads the disk): it
builds a fresh `Confinement` from the request's roots and the policy's path rules (the
request's own, else the runner's rules source: the live policy of the cwd). With no sandbox on
this machine it says why, and the command runs as before (the card and the audit say so).
`editor_launch` is the editor-terminal form: the command and args of `terminal/create` that run
acpd's launcher around `bash -c COMMAND`, with the profile in a one-use file.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from acpd.sandbox.build import build_confinement
from acpd.sandbox.bwrap import BWRAP_ENV, open_pins
from acpd.sandbox.launch import bash_argv
from acpd.sandbox.profile import Confinement
from acpd.sandbox.rules import PathRules
from acpd.sandbox.status import SWITCH_ENV, SandboxStatus, sandbox_status
from acpd.tools.capabilities import CommandRequest

RulesSource = Callable[[str], Awaitable[PathRules]]
"""The policy's path rules for a working directory (read when each command starts)."""


@dataclass(frozen=True, slots=True)
class Confined:
    conf: Confinement | None
    status: SandboxStatus
    label: str
    """What the card and the audit say: "bwrap", "bwrap (incomplete)", "none: <why>"."""
    without_git: tuple[str, ...] = ()
    """Workspace roots and cwd that had no `.git` before the command."""

    @property
    def notes(self) -> tuple[str, ...]:
        return self.conf.notes if self.conf is not None else ()

    def notes_after(self) -> tuple[str, ...]:
        """The notes, plus a warning for a repository the command created: its hooks and
        config were written in the sandbox, but git outside it (the user's, the editor's)
        would run them."""
        created = [d for d in self.without_git if os.path.lexists(os.path.join(d, ".git"))]
        return self.notes + tuple(
            f"the command created a git repository at {d}/.git: review its hooks and config "
            "before running git there" for d in created)

    def launch(self, command: str) -> tuple[list[str], list[int]]:
        """The argv, and the descriptors it needs inherited (the caller closes them)."""
        pins = open_pins(self.conf) if self.conf is not None and self.status.kind == "bwrap" \
            else {}
        try:
            return bash_argv(self.conf, command, self.status, pins), list(pins.values())
        except BaseException:
            for fd in pins.values():
                os.close(fd)
            raise


async def confine(request: CommandRequest, source: RulesSource | None) -> Confined:
    """Raises OSError when the workspace roots do not exist."""
    status = await anyio.to_thread.run_sync(sandbox_status)
    if not status.available:
        return Confined(None, status, status.label())
    rules = request.sandbox
    if rules is None:
        rules = await source(request.cwd) if source is not None else PathRules()
    build = functools.partial(_build, request.roots or (request.cwd,), rules, request.cwd)
    try:
        conf, bare = await anyio.to_thread.run_sync(build)
    except ValueError as exc:
        raise OSError(str(exc)) from None
    label = status.kind if conf.complete else f"{status.kind} (incomplete)"
    return Confined(conf, status, label, bare)


def _build(roots: tuple[str, ...], rules: PathRules, cwd: str
           ) -> tuple[Confinement, tuple[str, ...]]:
    """The confinement, and the roots (and cwd) that have no `.git` yet. Reads the disk."""
    conf = build_confinement(roots, rules, cwd=cwd)
    places = dict.fromkeys((*conf.roots, conf.cwd))
    return conf, tuple(d for d in places if not os.path.lexists(os.path.join(d, ".git")))


def policy_rules(shell: Any) -> RulesSource:
    """A rules source over the daemon's `ShellPolicies` (the same handle the decision used)."""

    async def rules(cwd: str) -> PathRules:
        handle = await shell.handle_for(cwd)
        return PathRules.of(handle.current)

    return rules


@dataclass(frozen=True, slots=True)
class EditorLaunch:
    command: str
    args: list[str]
    env: dict[str, str]
    profile: str | None

    def cleanup(self) -> None:
        """Remove the profile if the launcher never ran (it deletes it once read)."""
        if self.profile is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.profile)


def editor_launch(confined: Confined, command: str) -> EditorLaunch:
    """`terminal/create`'s command, args and extra env for one confined command."""
    if confined.conf is None:
        return EditorLaunch("bash", ["-c", command], {}, None)
    path = os.path.join(_profile_dir(), f"{uuid.uuid4().hex}.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(confined.conf.to_json())
    # -P: the workspace (the terminal's cwd) must not be able to shadow the launcher's modules
    # (-I would too, but it also drops PYTHONPATH, which a source checkout may need).
    args = ["-P", "-m", "acpd.sandbox", "exec", "--profile", path, "--", "bash", "-c", command]
    env = {k: os.environ[k] for k in (SWITCH_ENV, BWRAP_ENV) if k in os.environ}
    return EditorLaunch(sys.executable, args, env, path)


@functools.cache
def _profile_dir() -> str:
    path = tempfile.mkdtemp(prefix=f"acpd-profiles-{os.getpid()}-")
    atexit.register(shutil.rmtree, path, True)
    return path
