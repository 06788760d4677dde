"""How a runner confines one bash command: the glue between a `CommandRequest` and the
sandbox package (which knows nothing of requests, policies or the daemon).

`confine` runs per command and off the event loop (the workspace walk reads the disk): it
builds a fresh `Confinement` from the request's roots and the policy's path rules (the
request's own, else the runner's rules source: the live policy of the cwd). With no sandbox on
this machine it says why, and the command runs as before (the card and the audit say so).
`editor_launch` is the editor-terminal form: the command and args of `terminal/create` that run
acpd's launcher around `bash -c COMMAND`: a few lines of POSIX sh (SH_LAUNCHER; bash's
LAUNCHER past five git directories) that pin the git directories by descriptor and exec
bubblewrap, which reads the rest of its prebuilt argv from
two one-use files (`--args FD`). No Python starts on that path.

/tmp: one private directory per workspace (per daemon; removed when no live session works
there, `release_tmp`, or when the daemon exits) is bound at /tmp for every command there, so
a build that keeps state in /tmp between commands works.
It, and the argument files, lie in the daemon's run directory (daemon/tmpdirs.py), which a
later daemon sweeps when this one was killed before it could remove it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread

from acpd.daemon import envscrub, tmpdirs
from acpd.policy.gitdirs import is_git_directory
from acpd.sandbox.build import build_confinement
from acpd.sandbox.bwrap import head_args, kill_sandbox, kill_tagged, open_pins, tail_args
from acpd.sandbox.launch import bash_argv
from acpd.sandbox.parent import POOL, Job, ParentProcess, Pending, Refused, start_job
from acpd.sandbox.parent import prestart as parent_prestart
from acpd.sandbox.parent import start as start_parented
from acpd.sandbox.profile import Confinement
from acpd.sandbox.rules import PathRules
from acpd.sandbox.status import SandboxStatus, cached_status, sandbox_status
from acpd.tools.capabilities import CommandRequest

if TYPE_CHECKING:  # the relay is loaded with the first editor-terminal command
    from acpd.daemon.relay import Relay, Started

log = logging.getLogger("acpd.confine")

RulesSource = Callable[[str], Awaitable[PathRules]]
"""The policy's path rules for a working directory (read when each command starts)."""


@dataclass(frozen=True, slots=True)
class Confined:
    conf: Confinement | None
    status: SandboxStatus
    label: str
    """What the card and the audit say: "bwrap", "bwrap (incomplete)", "none: <why>"."""
    without_git: tuple[str, ...] = ()
    """Workspace roots and cwd that had no `.git`, and were no git directory, before the
    command."""

    @property
    def notes(self) -> tuple[str, ...]:
        return self.conf.notes if self.conf is not None else ()

    def notes_after(self) -> tuple[str, ...]:
        """The notes, plus a warning for a repository the command created, or a root or cwd
        it turned into a git directory: its hooks and config were written in the sandbox,
        but git outside it (the user's, the editor's) would run them."""
        notes = list(self.notes)
        for d in self.without_git:
            if os.path.lexists(os.path.join(d, ".git")):
                notes.append(f"the command created a git repository at {d}/.git: review its "
                             "hooks and config before running git there")
            elif is_git_directory(d):  # HEAD, objects/, refs/ written into the root itself
                notes.append(f"the command made {d} itself a git directory (HEAD, objects, "
                             "refs): git run there obeys its config and hooks; review them "
                             "before running git there")
        return tuple(notes)

    async def start_in_parent(self, command: str, env: dict[str, str]
                              ) -> ParentProcess | None:
        """`bash -c COMMAND` started by a sandbox parent (sandbox/parent.py), or None: no
        parent ready for this profile's base, or it could not take the command (then
        `launch` runs bubblewrap; never unconfined)."""
        if self.conf is None or self.status.kind != "bwrap" or self.status.binary is None:
            return None
        return await start_parented(self.status.binary, self.conf, ["bash", "-c", command],
                                    env)

    async def start_job(self, argv: list[str], env: dict[str, str],
                        stdio: tuple[int, int, int]) -> Job | None:
        """`argv` started by a sandbox parent with `stdio` (the editor path's relay), or
        None as for `start_in_parent`."""
        if self.conf is None or self.status.kind != "bwrap" or self.status.binary is None:
            return None
        return await start_job(self.status.binary, self.conf, argv, env, stdio)

    def prestart(self, shell: Sequence[str]) -> Pending | None:
        """The editor path's early start: the parent sets the command's init up while the
        editor starts the relay client (None: no parent ready; see parent.prestart)."""
        if self.conf is None or self.status.kind != "bwrap" or self.status.binary is None:
            return None
        return parent_prestart(self.status.binary, self.conf, shell)

    async def start_with(self, shell: Sequence[str], command: str, cwd: str,
                         env: dict[str, str], stdio: tuple[int, int, int],
                         pending: Pending | None = None) -> Started:
        """`shell` (`BASH -c COMMAND`) with `stdio` (the relay client's descriptors): in the
        init `pending` set up, else in a sandbox parent when one is ready, else under
        bubblewrap (never unconfined: with no sandbox there is no relay). Raises OSError
        when it cannot start."""
        if pending is not None:
            with contextlib.suppress(Refused, OSError):  # then as if there were none
                return await pending.go(stdio, env)
        job = await self.start_job(list(shell), env, stdio)
        if job is not None:
            return job
        return _Session(await self.spawn(command, cwd, env, stdio))

    @property
    def bubblewrap(self) -> bool:
        """Whether `spawn` runs bubblewrap, which `kill_sandbox` ends."""
        return self.conf is not None and self.status.kind == "bwrap"

    async def spawn(self, command: str, cwd: str, env: dict[str, str],
                    stdio: tuple[int, int, int]) -> anyio.abc.Process:
        """`bash -c COMMAND` under bubblewrap (bash alone with no sandbox here), in a session
        of its own; `stdio` as for `subprocess.Popen`. The start is shielded from cancellation:
        cancelled while it waits for the new process, asyncio would SIGKILL bubblewrap alone,
        and a sandbox still in its setup outlives that (see `kill_sandbox`). Once started, the
        process is the caller's to end."""
        argv, fds = self.launch(command)
        try:
            with anyio.CancelScope(shield=True):
                process = await anyio.open_process(
                    argv, cwd=cwd, env=env, stdin=stdio[0], stdout=stdio[1], stderr=stdio[2],
                    start_new_session=True, pass_fds=fds)
        finally:
            for fd in fds:
                os.close(fd)
        return process

    def launch(self, command: str) -> tuple[list[str], list[int]]:
        """The argv, and the descriptors it needs inherited (the caller closes them)."""
        pins = open_pins(self.conf) if self.conf is not None and self.bubblewrap else {}
        try:
            return bash_argv(self.conf, command, self.status, pins), list(pins.values())
        except BaseException:
            for fd in pins.values():
                os.close(fd)
            raise


class _Session:
    """A relayed command under bubblewrap, which a kill ends with its whole sandbox."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self._process = process

    async def wait(self) -> int:
        return await self._process.wait()

    def kill(self) -> None:
        kill_bubblewrap(self._process)


def kill_bubblewrap(process: anyio.abc.Process) -> None:
    """SIGKILL what `Confined.spawn` started under bubblewrap, its whole sandbox included."""
    if process.returncode is None:  # else bubblewrap is reaped, and its sandbox gone with it
        kill_sandbox(process.pid)


async def confine(request: CommandRequest, source: RulesSource | None) -> Confined:
    """Raises OSError when the workspace roots do not exist."""
    status = cached_status()
    if status is None:
        status = await anyio.to_thread.run_sync(sandbox_status)
    if not status.available:
        return Confined(None, status, status.label())
    rules = request.sandbox
    if rules is None:
        rules = await source(request.cwd) if source is not None else PathRules()
    if request.git_read_only:
        rules = dataclasses.replace(rules, git_writes=False)
    build = functools.partial(_build, request.roots or (request.cwd,), rules, request.cwd)
    try:
        conf, bare = await anyio.to_thread.run_sync(build)
    except ValueError as exc:
        raise OSError(str(exc)) from None
    label = status.kind if conf.complete else f"{status.kind} (incomplete)"
    return Confined(conf, status, label, bare)


_private: dict[str, None] = {}


def keep_private(directory: str | os.PathLike[str]) -> None:
    """Hide `directory` from every confined command from now on (the daemon's data directory:
    its checkpoint blobs are copies of workspace files, `deny_read` ones included; sessions,
    approvals and the audit log hold what was said). Called once the daemon knows it."""
    _private[os.path.abspath(os.fspath(directory))] = None


def _build(roots: tuple[str, ...], rules: PathRules, cwd: str
           ) -> tuple[Confinement, tuple[str, ...]]:
    """The confinement, and the roots (and cwd) that have no `.git` yet and are not git
    directories themselves. Reads the disk."""
    conf = build_confinement(roots, rules, cwd=cwd, hidden=tuple(_private))
    tmp = workspace_tmp(conf.roots)
    if tmp is not None:
        conf = dataclasses.replace(conf, tmp_dir=tmp)
    places = dict.fromkeys((*conf.roots, conf.cwd))
    return conf, tuple(d for d in places if not os.path.lexists(os.path.join(d, ".git"))
                       and not is_git_directory(d))


def policy_rules(shell: Any) -> RulesSource:
    """A rules source over the daemon's `ShellPolicies` (the same handle the decision used)."""

    async def rules(cwd: str) -> PathRules:
        handle = await shell.handle_for(cwd)
        return PathRules.of(handle.current)

    return rules


_tmp_lock = threading.Lock()
_tmp_dirs: dict[tuple[str, ...], str] = {}


def workspace_tmp(roots: tuple[str, ...]) -> str | None:
    """The private directory bound at /tmp for commands in these roots (created once, 0700,
    removed at exit; made again if something deleted it); None when it cannot be made
    or would lie inside a root (then the command gets a fresh tmpfs)."""
    with _tmp_lock:
        path = _tmp_dirs.get(roots)
        if path is not None and os.path.isdir(path) and not os.path.islink(path):
            return path
        try:
            path = tmpdirs.make("acpd-tmp-")
        except OSError:
            return None
        real = os.path.realpath(path)
        if _within(real, roots):
            tmpdirs.remove(path)
            return None
        _tmp_dirs[roots] = real
        return real


def release_tmp(in_use: Iterable[str]) -> list[str]:
    """Remove the private /tmp of every set of roots that none of the `in_use` directories
    (the cwds of the live sessions) lies in: a shared daemon serves many projects over its
    life, and what their builds left in /tmp would stay until it exits. The sandbox parents
    that bind one are killed first (they run no command: no live session works there).
    Returns the directories removed. Reads the disk: call it off the event loop."""
    cwds = [os.path.realpath(c) for c in in_use]
    with _tmp_lock:
        idle = {roots: path for roots, path in _tmp_dirs.items()
                if not any(_within(cwd, roots) for cwd in cwds)}
        for roots in idle:
            del _tmp_dirs[roots]
    for path in idle.values():
        POOL.kill_binding(path)
        tmpdirs.remove(path)
    return list(idle.values())


def _within(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/")
               for r in (os.path.realpath(root) for root in roots))


# First at exit: the sandbox parents bind mount points in these directories, and removing
# a mount point detaches it in every namespace (a parent still starting lost its own code).
tmpdirs.before_removal(POOL.kill_all)


LAUNCHER = """shopt -s execfail
b=$1 h=$2 t=$3 g=$4
shift 4
exec 4<"$h" 5<"$t" || exit 125
pins=()
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
    if cd -P -- "$1" 2>/dev/null && [ "$PWD" = "$1" ] && exec {fd}<.; then
        pins+=(--bind-fd "$fd" "$1")
    fi
    shift
done
shift
exec "$b" --unsetenv "$g" --args 4 "${pins[@]}" --args 5 -- "$@"
echo "acpd sandbox: NOT RUN: cannot run $b" >&2
exit 125"""
"""The editor path's launcher: `bash -c LAUNCHER acpd-sandbox BWRAP HEAD TAIL TAG PIN... --
bash -c COMMAND`. TAG, a variable name no one has, is unset in the sandbox, which does
nothing but put TAG in bubblewrap's command line, where `EditorLaunch.end_leftovers` finds
what a kill left running. Each pin (a git directory) is entered with `cd -P` and kept only
when the physical path is the one the walk found (a directory swapped for a link since is
not pinned, as in open_pins), then opened as `.` and bound by descriptor. bubblewrap reads
the namespace and mount options before the pins from HEAD and the rest from TAIL."""


SH_LAUNCHER = """b=$1 h=$2 t=$3 g=$4
shift 4
[ -x "$b" ] || { echo "acpd sandbox: NOT RUN: cannot run $b" >&2; exit 125; }
[ -r "$h" ] && [ -r "$t" ] || { echo "acpd sandbox: NOT RUN: no arguments file" >&2; exit 125; }
exec 4<"$h" 5<"$t"
eval "c=\\${$#}" "s=\\${$(($# - 2))}"
k=$(($# - 4)) n=0
for p do
    shift
    n=$((n + 1))
    [ "$n" -le "$k" ] || continue
    cd -P -- "$p" 2>/dev/null && [ "$PWD" = "$p" ] || continue
    case $n in
        1) exec 3<. && set -- "$@" --bind-fd 3 "$p" ;;
        2) exec 6<. && set -- "$@" --bind-fd 6 "$p" ;;
        3) exec 7<. && set -- "$@" --bind-fd 7 "$p" ;;
        4) exec 8<. && set -- "$@" --bind-fd 8 "$p" ;;
        5) exec 9<. && set -- "$@" --bind-fd 9 "$p" ;;
    esac
done
exec "$b" --unsetenv "$g" --args 4 "$@" --args 5 -- "$s" -c "$c"
"""
"""The same launcher in POSIX sh, with the same arguments (`sh -c SH_LAUNCHER acpd-sandbox
BWRAP HEAD TAIL TAG PIN... -- BASH -c COMMAND`), used when there are at most `SH_PINS` pins (sh
redirects single-digit descriptors only: 3 and 6 to 9 are free). The pins are the arguments
before the last four; each valid one is moved to the end as `--bind-fd N PATH`, which leaves
exactly those. A shell that starts in a fraction of bash's time (dash), on the path of every
editor-terminal command; where `sh` is bash, it behaves the same."""
SH_PINS = 5


@dataclass(frozen=True, slots=True)
class EditorLaunch:
    command: str
    args: list[str]
    env: dict[str, str]
    profile: str | None
    """The base path of the launch's argument files (HEAD is `.head`, TAIL `.tail`)."""
    relay: Relay | None = None
    """The relay client's socket, when the editor runs it (the caller serves it while the
    command runs)."""
    shell: tuple[str, ...] = ()
    """The confined command's argv when relayed (`BASH -c COMMAND`)."""
    tag: str | None = None
    """What the launcher puts in bubblewrap's command line (see LAUNCHER)."""

    async def end_leftovers(self) -> None:
        """After a command that did not exit by itself (killed, cancelled, timed out, the
        editor failed): end what is left of the launcher's sandbox. An editor that kills
        bubblewrap in its first milliseconds leaves the sandbox's init alive, which then runs
        the command, or waits forever holding the terminal open (see `kill_sandbox`). The
        relay path ends its sandbox itself."""
        if self.tag is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(kill_tagged, self.tag)

    def cleanup(self) -> None:
        """Remove the argument files or the relay's socket (after the command, or if it
        never ran)."""
        if self.relay is not None:
            self.relay.close()
        if self.profile is not None:
            for suffix in (".head", ".tail"):
                with contextlib.suppress(OSError):
                    os.unlink(self.profile + suffix)


def editor_launch(confined: Confined, command: str, env_blocklist: Sequence[str] = (),
                  keep: Iterable[str] = ()) -> EditorLaunch:
    """`terminal/create`'s command, args and extra env for one confined command, which runs
    without the editor's environment names that `env_blocklist` matches (envscrub.py:
    removed before bubblewrap starts; `keep`: the names the runner sets itself)."""
    conf, binary = confined.conf, confined.status.binary
    base = tag = None
    # Every program by absolute path: a relative PATH entry in the editor's environment
    # (`node_modules/.bin`, `.`) would find one the workspace holds, outside the sandbox for
    # the launcher, in place of the command's own shell inside it.
    argv = [envscrub.absolute("bash"), "-c", command]
    if conf is not None and confined.status.kind == "bwrap" and binary is not None:
        relay = _relay()
        if relay is not None:  # the daemon scrubs the environment it is handed
            return EditorLaunch(relay.client, relay.argv(argv)[1:], {}, None, relay,
                                tuple(argv))
        name = uuid.uuid4().hex
        base, tag = os.path.join(_profile_dir(), name), f"ACPD_LAUNCH_{name}"
        _write_args(base + ".head", head_args(conf))
        _write_args(base + ".tail", tail_args(conf))
        small = len(conf.pinned) <= SH_PINS
        # bash in privileged mode: no BASH_ENV or exported function of the editor's runs.
        shell = [envscrub.absolute("sh")] if small else [envscrub.absolute("bash"), "-p"]
        argv = [*shell, "-c", SH_LAUNCHER if small else LAUNCHER, "acpd-sandbox", binary,
                base + ".head", base + ".tail", tag, *conf.pinned, "--", *argv]
    argv = envscrub.scrubbed(argv, env_blocklist, keep)
    return EditorLaunch(argv[0], argv[1:], {}, base, tag=tag)


def _relay() -> Relay | None:
    """A relay socket when the client is built (sandbox/relaybin.py), else None: the sh
    launcher runs bubblewrap per command."""
    from acpd.sandbox import relaybin

    client = relaybin.client()
    if client is None:
        return None
    from acpd.daemon.relay import Relay

    try:
        return Relay(client)
    except OSError as exc:
        log.warning("relay: %s; the editor runs the launcher instead", exc)
        return None


def _write_args(path: str, args: list[str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(b"".join(os.fsencode(a) + b"\0" for a in args))


def _profile_dir() -> str:
    return tmpdirs.run_dir()
