"""The editor path's relay client (`relay.c`): where it is built, and whether it is current.

`scripts/build_native.py` compiles `relay.c` into `<sys.prefix>/acpd-native/acpd-relay-<digest>`,
the digest being that of the source: an edited source names another file, so a stale client is
never run. Without one (no C compiler, a non-editable install without the source, not Linux)
the daemon's editor path runs the sh launcher (daemon/confine.py), at bubblewrap's cost per
command. `ACPD_RELAY=off` does the same (the benchmark's named baseline).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.c")
SWITCH_ENV = "ACPD_RELAY"
PREFIX = "acpd-relay-"


def _digest() -> str | None:
    import hashlib

    try:
        with open(SOURCE, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()[:16]
    except OSError:
        return None


def directory() -> str:
    return os.path.join(sys.prefix, "acpd-native")


def binary_path(digest: str) -> str:
    return os.path.join(directory(), PREFIX + digest)


@functools.cache
def _expected() -> str | None:
    """Where this process's source's client would be (the source is read once)."""
    if not sys.platform.startswith("linux"):
        return None
    digest = _digest()
    return None if digest is None else binary_path(digest)


def client() -> str | None:
    """The built client for this source, or None (then the sh launcher runs). Looked for
    at each command: a rebuild after an edit of relay.c removes this one."""
    if os.environ.get(SWITCH_ENV, "").lower() in ("off", "0", "no", "false"):
        return None
    path = _expected()
    return path if path is not None and os.access(path, os.X_OK) else None


def build(cc: str) -> str | None:
    """Compile the client unless the current one exists; its path, or None when it already
    was. Raises subprocess.CalledProcessError (with the compiler's output) or OSError."""
    digest = _digest()
    if digest is None:
        raise OSError(f"no source at {SOURCE}")
    path = binary_path(digest)
    if os.access(path, os.X_OK):
        return None
    os.makedirs(directory(), exist_ok=True)
    staging = f"{path}.{os.getpid()}.new"
    command = [cc, "-O2", "-Wall", "-o", staging, SOURCE]  # no -Werror: a newer compiler warns more
    try:
        # Static where the C library allows it: no dynamic loader at each start (about
        # 0.2 ms of the 0.5 ms the client takes to run).
        if subprocess.run([*command, "-static"], capture_output=True).returncode != 0:
            subprocess.run(command, check=True, capture_output=True, text=True)
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.unlink(staging)
    for name in os.listdir(directory()):  # earlier sources' clients
        if name.startswith(PREFIX) and os.path.join(directory(), name) != path:
            os.unlink(os.path.join(directory(), name))
    _expected.cache_clear()
    return path
