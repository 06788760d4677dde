"""Where the shared daemon listens, and the checks that keep other users out.

Rules (the forwarder, the daemon and the control commands all go through these):

- The directory is `$XDG_RUNTIME_DIR/acpd` (when that variable names an existing absolute
  directory), else `/tmp/acpd-UID`. It is created with mode 0700; an existing one must be a
  real directory (not a symlink), owned by this uid, with no permission for group or
  others, or it is refused (`UnsafePath`): in a shared /tmp another user could have made it
  first, to read or answer everything an editor sends.
- The socket must be a socket owned by this uid with no permission for group or others;
  the daemon creates it under umask 077.
- Once connected, each side checks the other's uid with SO_PEERCRED: same uid only.
- One daemon per (acpd version, config, data directory, model) choice: `socket_name`
  names the socket after them, so a window started with another `--config` gets its own
  daemon, and an upgraded acpd does not talk to the old one.

Standard library only, and only cheap modules: the forwarder imports this on its way to
the editor's first answer.
"""

from __future__ import annotations

import os
import socket
import stat
import struct


class UnsafePath(Exception):
    """The runtime directory or the socket could be reached or replaced by someone else."""


def runtime_dir(*, create: bool = True) -> str:
    """The checked private directory (created when missing, unless not `create`: then
    its path, checked if it exists). Raises UnsafePath."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if base and os.path.isabs(base) and os.path.isdir(base):
        path = os.path.join(base, "acpd")
    else:
        path = f"/tmp/acpd-{os.getuid()}"
    if not create and not os.path.lexists(path):
        return path
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise UnsafePath(f"cannot create {path}: {exc.strerror or exc}") from None
    check_private_dir(path)
    return path


def check_private_dir(path: str) -> None:
    """Raises UnsafePath unless `path` is a directory of ours that only we can enter."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise UnsafePath(f"cannot use {path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{path} is not a directory (a symlink or a file): acpd will not use it")
    _check_owner_and_mode(path, info, "chmod 700")


def check_socket(path: str) -> bool:
    """False when there is no socket; True when it is ours; raises UnsafePath otherwise."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UnsafePath(f"cannot use {path}: {exc.strerror or exc}") from None
    if not stat.S_ISSOCK(info.st_mode):
        raise UnsafePath(f"{path} is not a socket: acpd will not use it (remove it)")
    _check_owner_and_mode(path, info, "remove it, then start acpd again; or chmod 600")
    return True


def _check_owner_and_mode(path: str, info: os.stat_result, fix: str) -> None:
    uid = os.getuid()
    if info.st_uid != uid:
        raise UnsafePath(
            f"{path} belongs to uid {info.st_uid}, not to you (uid {uid}): refused, someone "
            "else could read or answer what your editor sends"
        )
    if info.st_mode & 0o077:
        raise UnsafePath(
            f"{path} has mode {stat.S_IMODE(info.st_mode):04o}: other users can reach it; "
            f"acpd needs it private ({fix})"
        )


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket (Linux)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def check_peer(sock: socket.socket) -> int:
    """The peer's pid; raises UnsafePath when it runs as another uid."""
    pid, uid, _ = peer_credentials(sock)
    if uid != os.getuid():
        raise UnsafePath(f"the process at the other end (pid {pid}) runs as uid {uid}, not you")
    return pid


def socket_name(config: str | None, data_dir: str | None, model: str | None) -> str:
    """`daemon-HASH`, one name per acpd version and choice of config, data directory and
    model (the environment variables that move them count): after an upgrade, windows
    start a daemon of the new version, and the old one exits once idle."""
    import acpd

    parts = [
        acpd.__version__,
        os.path.abspath(config) if config else os.environ.get("ACPD_CONFIG", ""),
        os.path.abspath(data_dir) if data_dir else "",
        model or "",
        os.environ.get("XDG_CONFIG_HOME", ""),
        os.environ.get("XDG_DATA_HOME", ""),
    ]
    import zlib  # not hashlib (OpenSSL): this runs before the editor's first answer

    data = "\0".join(parts).encode(errors="surrogateescape")
    return f"daemon-{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def daemon_sockets(directory: str) -> list[str]:
    """Every daemon socket in the runtime directory (for `acpd ps` and `daemon stop`)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names
            if n.startswith("daemon") and n.endswith(".sock")]
