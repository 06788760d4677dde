"""The daemon's side of the sandbox parent (server.py): start one per base profile, hand it
each command, and hold what kills it.

Rules and limits:
- The *base* of a `Confinement` is what bubblewrap sets up once for a parent: the workspace
  roots, write paths, /tmp, programs under /tmp, the network. Everything found on disk per
  command (pins, read-only paths, masks) and the cwd go with each request, computed by the
  daemon's walk just before: no file-system fact is kept across commands. A base that
  differs (a policy reload that changes `write_roots` or `allow_network`, a new cache
  directory) is another parent; a parent of the same roots with another base is closed (its
  running commands finish; it then exits); at most MAX_PARENTS stay. A parent is also
  retired when a directory it binds was replaced (another inode) or the host's mount table
  changed (its mounts are a copy made when it started; the walk masks what the host shows).
- A parent starts in the background when a base is first seen; until it says it is ready
  the caller runs bubblewrap per command (`start` returns None). A parent found dead (killed,
  crashed) is replaced; a request it could not take, or a profile it could not apply, makes
  the caller fall back to bubblewrap for that command. Never to running unconfined.
- bubblewrap is started from the calling thread (the event loop's: `--die-with-parent` is
  tied to the thread that spawned it): a daemon that dies takes every parent and command with
  it.
- A started command (`ParentProcess`) holds its init's pidfd: killing the init kills the
  command's PID namespace. Its wait status comes on the reply socket; it counts as ended once
  the init is gone (so is everything it left behind).
- Requests larger than MAX_REQUEST (thousands of masks) go to bubblewrap instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence

import anyio
import anyio.abc

from acpd.sandbox.bwrap import head_args, kill_sandbox
from acpd.sandbox.profile import Confinement

MAX_PARENTS = 4
MAX_REQUEST = 128 * 1024
PARENT_ENV = "ACPD_SANDBOX_PARENT"
"""`off`: run bubblewrap per command (the named baseline in benchmarks/sandbox.py)."""
CAPS = ("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP", "--cap-add",
        "CAP_SYS_RESOURCE")
_SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = (f"import sys; sys.path.insert(0, {_SRC!r}); "
          "from acpd.sandbox.server import main; main(int(sys.argv[1]))")


class Refused(Exception):
    """The parent did not start the command (the message says why); nothing ran."""


def base_of(conf: Confinement) -> Confinement:
    """The part of `conf` a parent's bubblewrap sets up once (the rest goes per command)."""
    return Confinement(cwd="/", roots=conf.roots, write_paths=conf.write_paths,
                       tool_dirs=conf.tool_dirs, network=conf.network,
                       private_tmp=conf.private_tmp, tmp_dir=conf.tmp_dir)


def command_env(conf: Confinement, env: dict[str, str]) -> dict[str, str]:
    return {**env, "TMPDIR": "/tmp"} if conf.private_tmp or conf.tmp_dir else env


def request_of(conf: Confinement, argv: Sequence[str], env: dict[str, str] | None) -> bytes:
    """The per-command part, as the server reads it. `env` None: a deferred start (the
    environment and the descriptors come with the go-ahead, `Pending.go`)."""
    return json.dumps({
        "argv": list(argv), "deferred": env is None,
        "env": command_env(conf, env) if env is not None else {},
        "cwd": conf.cwd, "pinned": list(conf.pinned),
        "read_only": list(conf.read_only), "stub_files": list(conf.stub_files),
        "mask_files": list(conf.mask_files),
        "mask_dirs": list(conf.mask_dirs), "reexpose": list(conf.reexpose),
    }).encode()


def parent_argv(bwrap: str, base: Confinement, control_fd: int) -> list[str]:
    head = [a for a in head_args(base) if a != "--disable-userns"]  # server.py does it
    # The server's code and interpreter must be visible inside: acpd may be installed under
    # /tmp, which the sandbox replaces (a checkout's .venv there is hidden too).
    python = os.path.realpath(sys.executable)
    return [bwrap, *CAPS, *head, "--ro-bind", _SRC, _SRC, "--chdir", "/", "--", python, "-I",
            "-S", "-c", SERVER, str(control_fd)]


class Parent:
    """One bubblewrap around one server.py, for one base."""

    def __init__(self, bwrap: str, base: Confinement,
                 identity: tuple[tuple[int, int], ...] = ()) -> None:
        self.base = base
        self.identity = identity
        """The bound directories' (device, inode) when it started (see `_identity`)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._control = mine
        self._ready = False
        try:
            self.process = subprocess.Popen(
                # stderr too: a parent that cannot start (its code unreadable in some
                # sandboxes) must not print into the daemon's stderr; commands then fall
                # back to bubblewrap per command, confined all the same.
                parent_argv(bwrap, base, theirs.fileno()), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                env={"PATH": os.environ.get("PATH", os.defpath)})
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        mine.setblocking(False)

    @property
    def pid(self) -> int:
        """bubblewrap's (tests kill it to see the next command start another)."""
        return self.process.pid

    def ready(self) -> bool:
        """Started and not dead (checks without waiting)."""
        if self.dead():
            return False
        if not self._ready:
            with contextlib.suppress(OSError):
                self._ready = self._control.recv(1) == b"R"
        return self._ready

    def dead(self) -> bool:
        return self.process.poll() is not None

    def close(self) -> None:
        """No more commands: the server exits once its running ones have ended."""
        with contextlib.suppress(OSError):
            self._control.close()

    async def start(self, request: bytes, stdio: tuple[int, int, int]) -> Job:
        """Raises Refused (nothing ran), or OSError when the parent is gone (nothing ran)."""
        return await _started(self.send(request, stdio))

    def send(self, request: bytes, stdio: tuple[int, int, int]) -> socket.socket:
        """Hand a request over; the reply socket (non-blocking). Raises Refused or OSError
        (nothing ran)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            socket.send_fds(self._control, [request], [*stdio, theirs.fileno()])
        except BlockingIOError:
            mine.close()
            raise Refused("the sandbox parent is busy") from None
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        mine.setblocking(False)
        return mine


async def _started(reply: socket.socket) -> Job:
    """The init's first word: "S" and its pidfd (set up), or why it did not start."""
    try:
        data, fds = await _receive(reply)
    except BaseException:
        _abandon(reply)
        raise
    if data[:1] == b"S" and len(fds) == 1:
        return Job(fds[0], reply)
    for fd in fds:
        os.close(fd)
    reply.close()
    if data[:1] == b"F":
        raise Refused(data[1:].decode(errors="replace"))
    raise OSError("the sandbox parent ended before the command started")


class Pending:
    """A command whose init a parent sets up before its descriptors exist: the editor path
    sends the request when it asks the editor for a terminal, and the relay client brings
    the terminal's descriptors and environment later (`go`). Until then the init holds no
    descriptor of the command's and runs nothing; `abandon` (no client came) kills it."""

    def __init__(self, parent: Parent, conf: Confinement, reply: socket.socket) -> None:
        self.parent = parent
        self._conf = conf
        self._reply: socket.socket | None = reply

    async def go(self, stdio: tuple[int, int, int], env: dict[str, str]) -> Job:
        """The command, running with `stdio` and `env`. Raises Refused or OSError when it
        cannot (nothing ran: the caller runs it under bubblewrap)."""
        reply, self._reply = self._reply, None
        if reply is None:
            raise OSError("this start was used or abandoned")
        try:
            job = await _started(reply)
        except (Refused, OSError) as exc:
            _forget_if_gone(self.parent, exc)
            raise
        message = b"G" + json.dumps(command_env(self._conf, env)).encode()
        try:
            if len(message) > MAX_REQUEST:
                raise Refused("the environment is too large for the sandbox parent")
            socket.send_fds(reply, [message], list(stdio))
        except BaseException:
            job.kill()
            with contextlib.suppress(OSError):
                os.close(job.pidfd)
            job.pidfd = -1
            reply.close()
            raise
        return job

    def abandon(self) -> None:
        if self._reply is not None:
            _abandon(self._reply)
            self._reply = None


def _abandon(reply: socket.socket) -> None:
    """A start given up (cancelled): from now on the init cannot send "S" and so runs
    nothing; one that sent it already is killed."""
    with contextlib.suppress(OSError):
        reply.shutdown(socket.SHUT_RD)
    with contextlib.suppress(OSError):
        _data, fds, _flags, _addr = socket.recv_fds(reply, 8192, 1, socket.MSG_DONTWAIT)
        for fd in fds:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            os.close(fd)
    reply.close()


async def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 8192, 1)
            for fd in fds:  # received descriptors are inheritable: no other child gets one
                os.set_inheritable(fd, False)
            return data, fds
        except BlockingIOError:
            await anyio.wait_readable(sock)


class Job:
    """A command a parent started: its init's pidfd and the reply socket."""

    def __init__(self, pidfd: int, reply: socket.socket) -> None:
        self.pidfd = pidfd
        self._reply = reply
        self.returncode: int | None = None
        self._sent: int | None = None

    def send_signal(self, sig: int) -> None:
        """End the command: SIGKILL to its init, whatever `sig` (an init ignores any other
        signal from outside; bubblewrap, which this replaces, died of any), which kills its
        whole PID namespace. The exit code says `sig`."""
        if self.returncode is not None or self.pidfd < 0:
            return
        self._sent = self._sent or sig
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def alive(self) -> bool:
        if self.returncode is not None or self.pidfd < 0:
            return False
        return not select.select([self.pidfd], [], [], 0)[0]

    async def wait(self) -> int:
        """The exit code (negative: the signal that ended it), like Popen.returncode."""
        if self.returncode is not None:
            return self.returncode
        try:
            data, fds = await _receive(self._reply)
        except OSError:
            data, fds = b"", []
        for fd in fds:
            os.close(fd)
        # Gone means gone: the init exits after its report, and only then has the kernel
        # killed what the command left behind.
        await anyio.wait_readable(self.pidfd)
        if data[:1] == b"E" and len(data) == 5 and self._sent is None:
            status = int.from_bytes(data[1:], "little", signed=True)
            code = os.waitstatus_to_exitcode(status)
            # bubblewrap's convention, so both paths report alike: a command killed by a
            # signal exits 128 + its number.
            self.returncode = 128 - code if code < 0 else code
        else:  # killed (cancel, timeout, stop), or its parent died
            self.returncode = -(self._sent or signal.SIGKILL)
        self._reply.close()
        os.close(self.pidfd)
        self.pidfd = -1
        return self.returncode


class FdStream(anyio.abc.ByteReceiveStream):
    """A pipe's read end as an anyio byte stream (what the local runner pumps)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        os.set_blocking(fd, False)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self._fd < 0:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class ParentProcess:
    """A command run by a parent, with what the local runner uses of a process."""

    def __init__(self, job: Job, stdout: int, stderr: int) -> None:
        self.job = job
        self.stdout = FdStream(stdout)
        self.stderr = FdStream(stderr)

    @property
    def returncode(self) -> int | None:
        return self.job.returncode

    async def wait(self) -> int:
        try:
            return await self.job.wait()
        finally:
            self.stdout.close()
            self.stderr.close()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        self.job.send_signal(sig)

    def alive(self) -> bool:
        return self.job.alive()


async def start(bwrap: str, conf: Confinement, argv: Sequence[str],
                env: dict[str, str]) -> ParentProcess | None:
    """Run `argv` confined by `conf` in a parent, its output on pipes, or None: the caller
    runs bubblewrap."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        job = await start_job(bwrap, conf, argv, env, (null, out_w, err_w))
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        for fd in (null, out_w, err_w):
            os.close(fd)
    if job is None:
        os.close(out_r)
        os.close(err_r)
        return None
    return ParentProcess(job, out_r, err_r)


async def start_job(bwrap: str, conf: Confinement, argv: Sequence[str], env: dict[str, str],
                    stdio: tuple[int, int, int]) -> Job | None:
    """Run `argv` confined by `conf` in a parent with `stdio` (the caller's to close), or
    None: no parent ready for this base, or it could not take the command (the caller runs
    bubblewrap; never unconfined)."""
    taken = _parent_for(bwrap, conf, argv, env)
    if taken is None:
        return None
    parent, request = taken
    try:
        return await parent.start(request, stdio)
    except (Refused, OSError) as exc:
        _forget_if_gone(parent, exc)
        return None


def prestart(bwrap: str, conf: Confinement, argv: Sequence[str]) -> Pending | None:
    """Send `argv`'s request now, its descriptors and environment to come (`Pending.go`);
    None when no parent can take it (the caller runs bubblewrap later)."""
    taken = _parent_for(bwrap, conf, argv, None)
    if taken is None:
        return None
    parent, request = taken
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)  # placeholders: the init
    try:                                                   # replaces them at the go-ahead
        return Pending(parent, conf, parent.send(request, (null, null, null)))
    except (Refused, OSError) as exc:
        _forget_if_gone(parent, exc)
        return None
    finally:
        os.close(null)


def _parent_for(bwrap: str, conf: Confinement, argv: Sequence[str], env: dict[str, str] | None
                ) -> tuple[Parent, bytes] | None:
    """A ready parent for `conf`'s base and the request, or None (bubblewrap runs it)."""
    if conf.git_read_only or conf.git_writable:
        return None  # read-only git directories (bwrap.git_args): the server does not make them
    parent = POOL.take(bwrap, conf)
    if parent is None:
        return None
    request = request_of(conf, argv, env)
    return None if len(request) > MAX_REQUEST else (parent, request)


def _forget_if_gone(parent: Parent, exc: Exception) -> None:
    """A refusal leaves a live parent in the pool; a parent that failed otherwise, or died,
    is replaced at the next command."""
    if not isinstance(exc, Refused) or parent.dead():
        POOL.drop(parent)


class ParentPool:
    """The daemon's parents, by base (process-wide: runners come and go per prompt)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parents: dict[Confinement, Parent] = {}
        self._mounts: select.poll | None = None
        self._mounts_file: int = -1

    def take(self, bwrap: str, conf: Confinement) -> Parent | None:
        """A ready parent for `conf`'s base; None when there is none yet (one is started)
        or parents are switched off."""
        if os.environ.get(PARENT_ENV, "").lower() in ("off", "0", "no", "false", "none"):
            return None
        base = base_of(conf)
        identity = _identity(base)
        with self._lock:
            if self._mounts_changed():
                self._drop_all()
            parent = self._parents.get(base)
            if parent is not None and (parent.dead() or parent.identity != identity):
                self._drop(base)  # dead, or a bound directory was replaced since it started
                parent = None
            if parent is None:
                self._start(bwrap, base, identity)
                return None
            return parent if parent.ready() else None

    def _mounts_changed(self) -> bool:
        """Whether the host's mount table changed since the last look (the kernel flags
        /proc/self/mountinfo for poll). A parent's mounts are a copy made when it started:
        a bind of the workspace unmounted on the host since would still show there, unmasked
        (the walk masks what the host's mounts show). Any change retires every parent."""
        if self._mounts is None:
            try:
                self._mounts_file = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return True
            self._mounts = select.poll()
            self._mounts.register(self._mounts_file, select.POLLPRI | select.POLLERR)
            self._mounts.poll(0)  # the first poll reports the state it starts from
            return True
        return bool(self._mounts.poll(0))

    def _drop_all(self) -> None:
        for base in list(self._parents):
            self._drop(base)

    def parent_for(self, conf: Confinement) -> Parent | None:
        """The parent (ready or not) for `conf`'s base, if any (tests, benchmarks)."""
        with self._lock:
            return self._parents.get(base_of(conf))

    def drop(self, parent: Parent) -> None:
        """Stop using `parent` (it failed a request): the next command starts another."""
        with self._lock:
            if self._parents.get(parent.base) is parent:
                self._drop(parent.base)

    def close_all(self) -> None:
        with self._lock:
            self._drop_all()

    def kill_all(self) -> None:
        """At exit, before the private /tmp directories go: a parent still starting would
        find the mount points of its own code removed under it (removing a mount point on
        the host detaches that mount in every namespace) and fail. Each parent's bubblewrap
        is killed and waited for, and every command in it dies with it."""
        self.kill_binding(None)

    def kill_binding(self, tmp_dir: str | None) -> None:
        """`kill_all` for the parents that bind `tmp_dir` at /tmp (None: every parent),
        before that directory is removed."""
        with self._lock:
            bases = [b for b in self._parents if tmp_dir is None or b.tmp_dir == tmp_dir]
            parents = [self._parents.pop(b) for b in bases]
        for parent in parents:
            parent.close()
            if parent.process.poll() is None:  # (not reaped: its pid is still its own)
                kill_sandbox(parent.process.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                parent.process.wait(timeout=2)

    def _start(self, bwrap: str, base: Confinement, identity: tuple[tuple[int, int], ...]
               ) -> None:
        for other in [b for b in self._parents if b.roots == base.roots]:
            self._drop(other)  # a reload changed the base: the old one is stale
        while len(self._parents) >= MAX_PARENTS:
            self._drop(next(iter(self._parents)))
        with contextlib.suppress(OSError):
            self._parents[base] = Parent(bwrap, base, identity)

    def _drop(self, base: Confinement) -> None:
        self._parents.pop(base).close()


def _identity(base: Confinement) -> tuple[tuple[int, int], ...]:
    """(device, inode) of every directory the base binds: a workspace removed and made again
    is another directory, which a parent started before would not show (it binds the old)."""
    out = []
    for path in (*base.roots, *base.write_paths, *base.tool_dirs, base.tmp_dir):
        try:
            st = os.stat(path) if path else None
        except OSError:
            st = None
        out.append((st.st_dev, st.st_ino) if st is not None else (-1, -1))
    return tuple(out)


POOL = ParentPool()
