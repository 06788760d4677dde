"""The sandbox parent: a long-lived process inside bubblewrap that starts each command in a
fresh mount and PID namespace of its own, so a command pays neither bubblewrap's exec nor the
user, network, IPC and UTS namespaces, /dev and the base binds (daemon side: parent.py).

Rules, in the order a command meets them:
- bubblewrap set up the base once: the user namespace, the network namespace unless the
  profile allows the network, IPC, UTS, PID, the read-only root, /dev, /tmp, the writable
  places. This process keeps CAP_SYS_ADMIN, CAP_SETPCAP and CAP_SYS_RESOURCE in that user
  namespace (`--cap-add`); nothing a command runs ever holds one. First it sets the
  namespace's `user.max_user_namespaces` to 0: no command can create a user namespace (and
  so never regains a capability), and only a holder of CAP_SYS_RESOURCE here could raise it.
  (Not bubblewrap's `--disable-userns`: its nested user namespace would lock every mount
  and forbid the fresh /proc each command needs.)
- A request (one SOCK_SEQPACKET message on the control socket) carries the command's fresh
  per-command profile (the pins, read-only paths and masks the daemon's walk found just
  now), argv, env, and by SCM_RIGHTS its stdin, stdout, stderr and a reply socket. A
  *deferred* request (the editor path: parent.prestart) has no env and placeholder stdio:
  the init sets everything up and says so ("S"), then waits for "G" with the environment and
  the real descriptors (the relay client's), and only then spawns the command; an end of
  file instead (no client came) ends it with nothing run.
- For each request the parent clones a child into a new mount, PID and IPC namespace at
  once: the *init*, PID 1 there. It is cloned ahead, a *spare* waiting for the next request
  (the clone and its first writes to the copied memory cost about a millisecond, paid
  between commands): the request and its descriptors are handed to it, and the next spare
  is cloned once the parent has closed its copies of them; without a live spare the parent
  clones the init when the request comes. It gets a /dev/shm and a devpts of its own (the /dev
  tmpfs is shared with the parent's other commands, so it is made read-only: no command
  replaces a node for the next one), then applies the profile: pins (a git directory
  opened without following links, checked to be the path the walk found, bound onto itself
  by descriptor), read-only binds (recursive, read-only, nosuid, nodev), stubs (/dev/null
  where a hook must not appear, the empty file made first), masks (/dev/null over a file,
  an empty 0555 tmpfs over a directory, resolver paths bound back), the cwd. A mount that
  fails ends the command before it starts ("F"): nothing runs with part of its profile.
- The init mounts a /proc of its own namespace (no other command, and not the parent, is
  visible), covers the writable /proc files as bubblewrap does, drops every capability
  (bounding set, ambient, permitted, effective, inheritable; no_new_privs), becomes
  non-dumpable (the command, same uid, cannot ptrace it), sends its pidfd
  on the reply socket ("S": set up, about to run; if the daemon gave up, nothing runs) and
  spawns `argv` in a new session. It reaps orphans and, when the command ends, reports its
  wait status ("E") and exits: the kernel then kills every process left in the namespace
  (`setsid`, `nohup`, double forks). A signal from outside kills it (SIGKILL: an init
  ignores the others), and with it the whole namespace: that is how the daemon cancels.
- End of file (or a reset) on the control socket: no new commands; the parent waits for the
  running ones and exits. If this process dies, bubblewrap ends and every command with it.

Runs as `python -I -S -c ...` with this file's package on sys.path; imports stay few.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

from acpd.sandbox import syscalls as sc

MAX_REQUEST = 1 << 20
RO_FLAGS = sc.MOUNT_ATTR_RDONLY | sc.MOUNT_ATTR_NOSUID | sc.MOUNT_ATTR_NODEV
CLONE_FLAGS = sc.CLONE_NEWNS | sc.CLONE_NEWPID | sc.CLONE_NEWIPC | signal.SIGCHLD
USERNS_LIMIT = "/proc/sys/user/max_user_namespaces"
PROC_COVERS = ("sys", "sysrq-trigger", "irq", "bus")
"""What bubblewrap makes read-only in its /proc when it is writable."""


def main(control_fd: int) -> None:
    """Serve requests on `control_fd` until its end of file."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # inits are reaped by the kernel
    control = socket.socket(fileno=control_fd)
    with open(USERNS_LIMIT, "w", encoding="ascii") as limit:
        limit.write("0")  # no user namespace below this one, ever (see the docstring)
    held = held_capabilities()
    control.send(b"R")
    spare = _spare(control, held)
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(control, MAX_REQUEST, 4)
        except InterruptedError:
            continue
        except OSError:  # the daemon went away (a reset, not an end of file): the same end
            break
        if not data:
            break
        if len(fds) != 4:
            _close(fds)
            continue
        # No spare (or it died): clone the init now.
        if (spare is None or not _hand_over(spare, data, fds)) and sc.clone(CLONE_FLAGS) == 0:
            control.close()
            _init(data, fds, held)
        _close(fds)  # before the next spare is cloned: it must hold none of these
        spare = _spare(control, held)  # the next one, while this one sets up
    if spare is not None:
        spare.close()  # its end of file: it exits, having run nothing
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break


def _spare(control: socket.socket, held: tuple[int, ...]) -> socket.socket | None:
    """The next command's init, cloned ahead of its request (the clone of this process and
    its first writes to the copied memory, and a fresh /dev/shm and devpts, cost about a
    millisecond: paid between commands, not by one). It waits on the socket returned here;
    None if it could not be made (the next request clones one as before)."""
    try:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:
        return None
    try:
        child = sc.clone(CLONE_FLAGS)
    except OSError:
        mine.close()
        theirs.close()
        return None
    if child == 0:
        control.close()
        mine.close()
        _wait_for_request(theirs, held)
    theirs.close()
    return mine


def _wait_for_request(sock: socket.socket, held: tuple[int, ...]) -> None:
    """A spare init (PID 1 of its namespaces): set /dev up, then wait for one request.
    Never returns; an end of file (the parent is done) ends it with nothing run."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        _fresh_dev()
        data, fds, _flags, _addr = socket.recv_fds(sock, MAX_REQUEST, 4)
    except BaseException:  # a spare that cannot serve ends; the parent then clones one
        os._exit(125)
    if not data or len(fds) != 4:
        os._exit(0)
    sock.close()
    _init(data, fds, held, dev_ready=True)


def _hand_over(spare: socket.socket, data: bytes, fds: list[int]) -> bool:
    """Give the request to the waiting spare (and close our end: it serves one); False
    when it is gone."""
    try:
        socket.send_fds(spare, [data], fds, socket.MSG_DONTWAIT)
        return True
    except OSError:
        return False
    finally:
        spare.close()


def held_capabilities() -> tuple[int, ...]:
    """The capabilities still in this process's bounding set (bubblewrap left only those
    it was told to add): the ones each command must drop."""
    with open("/proc/sys/kernel/cap_last_cap", "rb") as handle:
        last = int(handle.read())
    return tuple(cap for cap in range(last + 1) if sc.capbset_read(cap))


def _init(data: bytes, fds: list[int], held: tuple[int, ...], *, dev_ready: bool = False
          ) -> None:
    """PID 1 of the command's fresh PID and mount namespaces. Never returns."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    reply = os.dup2(fds[3], 3, inheritable=False)
    os.closerange(4, 65536)
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):  # Python's handlers: an init ignores them
            signal.signal(sig, signal.SIG_DFL)
        request = json.loads(data)
        if not dev_ready:
            _fresh_dev()
        apply_profile(request)
        os.setsid()
        _mount_proc()
        sc.drop_all_capabilities(held)
        sc.prctl(sc.PR_SET_DUMPABLE, 0)  # the command may not ptrace its init (same uid)
        deferred = request.get("deferred") is True
        program = None if deferred else _program(request)
        pidfd = os.pidfd_open(os.getpid())
        # Before the command runs: a daemon that gave up waiting (its end is closed) makes
        # this fail, and nothing runs.
        socket.send_fds(_reply(reply), [b"S"], [pidfd])
        os.close(pidfd)
        if program is not None:
            pid = _spawn(program)
    except BaseException as exc:  # everything goes to the daemon, nothing runs
        try:
            os.write(reply, b"F" + f"{type(exc).__name__}: {exc}".encode()[:4000])
        finally:
            os._exit(125)
    if program is None:
        pid = _go_ahead(request, reply)
    while True:  # reap orphans until the command itself ends
        try:
            child, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(125)
        if child == pid:
            # Reported before the exit that kills the rest of the namespace: the daemon
            # waits for this process to be gone (its pidfd) before it calls the command done.
            os.write(reply, b"E" + status.to_bytes(4, "little", signed=True))
            os._exit(0)


def _go_ahead(request: dict[str, object], reply: int) -> int:
    """A deferred start: wait for "G" with the command's environment and its stdin, stdout
    and stderr (the relay client's: the editor's terminal), then spawn. Anything else (the
    daemon gave up: an end of file) ends the init with nothing run. After "S" the daemon
    waits for "E": a command that cannot be spawned says why on its own stderr and exits
    125."""
    try:
        data, fds, _flags, _addr = socket.recv_fds(_reply(reply), MAX_REQUEST, 3)
    except OSError:
        os._exit(125)
    if data[:1] != b"G" or len(fds) != 3:
        os._exit(125)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    _close([fd for fd in fds if fd > 2])
    try:
        env = json.loads(data[1:])
        return _spawn(_program({**request, "env": env}))
    except Exception as exc:
        with contextlib.suppress(OSError):
            os.write(2, f"acpd sandbox: NOT RUN: {type(exc).__name__}: {exc}\n".encode())
        os.write(reply, b"E" + (125 << 8).to_bytes(4, "little", signed=True))
        os._exit(0)


def _reply(fd: int) -> socket.socket:
    return socket.socket(fileno=os.dup(fd))


def apply_profile(request: dict[str, object]) -> None:
    """Pins, read-only binds, stubs, masks, cwd: the order of bwrap.py's argv (later mounts
    cover earlier ones). Raises OSError when a mount fails (the command does not run)."""
    for path in _paths(request, "pinned"):
        _pin(path)
    for path in _paths(request, "read_only"):
        sc.mount(path, path, None, sc.MS_BIND | sc.MS_REC)
        sc.mount_setattr(sc.AT_FDCWD, path, sc.AT_RECURSIVE, RO_FLAGS)
    for path in _paths(request, "stub_files"):
        _stub(path)
    for path in _paths(request, "mask_files"):
        try:
            sc.mount("/dev/null", path, None, sc.MS_BIND)
        except FileNotFoundError:
            continue  # gone since the walk: nothing left there to hide
        sc.mount_setattr(sc.AT_FDCWD, path, 0, RO_FLAGS)
    reexpose = _paths(request, "reexpose")
    for path in _paths(request, "mask_dirs"):
        _mask_dir(path, [p for p in reexpose if p.startswith(path.rstrip("/") + "/")])
    os.chdir(str(request["cwd"]))


def _stub(path: str) -> None:
    """/dev/null bound read-only where a file must not appear, the mount point made first
    when missing (an empty file of mode 0444, with its parents, as bubblewrap does)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o444))
    sc.mount("/dev/null", path, None, sc.MS_BIND)
    sc.mount_setattr(sc.AT_FDCWD, path, 0, RO_FLAGS)


def _pin(path: str) -> None:
    """Bind the directory onto itself through a descriptor opened without following a
    link and checked to be `path`: a directory swapped for a link since the walk is not
    pinned (as open_pins does for bubblewrap), and the bind lands on what was checked."""
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if os.readlink(f"/proc/self/fd/{fd}") != path:
            return
        tree = sc.open_tree(fd, "", sc.OPEN_TREE_CLONE | sc.OPEN_TREE_CLOEXEC
                            | sc.AT_EMPTY_PATH | sc.AT_RECURSIVE)
        try:
            sc.move_mount(tree, "", fd, "", sc.MOVE_MOUNT_F_EMPTY_PATH
                          | sc.MOVE_MOUNT_T_EMPTY_PATH)
        finally:
            os.close(tree)
    finally:
        os.close(fd)


def _mask_dir(path: str, inner: list[str]) -> None:
    """An empty tmpfs of mode 0555 (made first when missing, as bubblewrap does: a git
    directory without hooks gets an empty read-only one), with `inner` bound back read-only
    from what was there before the tmpfs covered it."""
    kept = [(p, sc.open_tree(sc.AT_FDCWD, p, sc.OPEN_TREE_CLONE | sc.OPEN_TREE_CLOEXEC
                             | sc.AT_RECURSIVE)) for p in inner if os.path.isdir(p)]
    try:
        if not os.path.isdir(path):
            os.makedirs(path, exist_ok=True)
        sc.mount("tmpfs", path, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV,
                 "mode=0755" if kept else "mode=0555")
        for target, tree in kept:
            os.makedirs(target, exist_ok=True)
            sc.mount_setattr(tree, "", sc.AT_EMPTY_PATH | sc.AT_RECURSIVE, RO_FLAGS)
            sc.move_mount(tree, "", sc.AT_FDCWD, target, sc.MOVE_MOUNT_F_EMPTY_PATH)
        if kept:
            os.chmod(path, 0o555)
    finally:
        for _, tree in kept:
            os.close(tree)


def _fresh_dev() -> None:
    """What bubblewrap's `--dev` gives each command and a parent's /dev would share between
    them: a fresh /dev/shm and a fresh devpts instance (no pty of another command); and the
    /dev tmpfs read-only, so no command replaces a node (/dev/urandom, /dev/null) for the
    commands after it."""
    sc.mount("tmpfs", "/dev/shm", "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "mode=0755")
    sc.mount("devpts", "/dev/pts", "devpts", sc.MS_NOSUID | 8,  # 8: MS_NOEXEC
             "newinstance,ptmxmode=0666,mode=620")
    sc.mount_setattr(sc.AT_FDCWD, "/dev", 0, sc.MOUNT_ATTR_RDONLY)


def _mount_proc() -> None:
    sc.mount("proc", "/proc", "proc", sc.MS_NOSUID | sc.MS_NODEV | 8)  # 8: MS_NOEXEC
    for name in PROC_COVERS:
        path = "/proc/" + name
        if os.access(path, os.W_OK):
            sc.mount(path, path, None, sc.MS_BIND | sc.MS_REC)
            sc.mount_setattr(sc.AT_FDCWD, path, sc.AT_RECURSIVE, RO_FLAGS)


def _program(request: dict[str, object]) -> tuple[str, list[str], dict[str, str]]:
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    env = {str(k): str(v) for k, v in request["env"].items()}  # type: ignore[attr-defined]
    return _which(argv[0], env.get("PATH", os.defpath)), argv, env


def _spawn(program: tuple[str, list[str], dict[str, str]]) -> int:
    path, argv, env = program
    defaults = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
    return os.posix_spawn(path, argv, env, setsigdef=defaults, setsigmask=())


def _which(name: str, path: str) -> str:
    if "/" in name:
        return name
    for directory in path.split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(f"{name}: not found on PATH")


def _paths(request: dict[str, object], key: str) -> list[str]:
    value = request.get(key, [])
    return [str(p) for p in value] if isinstance(value, list) else []


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


if __name__ == "__main__":
    main(int(sys.argv[1]))
