"""C sources acpd compiles at set-up: where each build lives, and whether it is current.

`scripts/build_native.py` compiles each source into `<sys.prefix>/acpd-native/<prefix><digest>
<suffix>`, the digest being that of the source: an edited source names another file, so a stale
build is never used, and building again removes the earlier ones. Every user of a build has a
pure fallback for when there is none (no C compiler, a non-editable install without the
sources, not Linux): the build makes acpd faster, never different.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys


def directory() -> str:
    return os.path.join(sys.prefix, "acpd-native")


class CBuild:
    """One C source and how it is compiled."""

    def __init__(self, source: str, prefix: str, *, suffix: str = "",
                 flags: tuple[str, ...] = (), static: bool = False) -> None:
        self.source = source
        self.prefix = prefix
        self.suffix = suffix
        self.flags = flags
        self.static = static
        """Try `-static` first (no dynamic loader at each start of a program)."""

    def _digest(self) -> str | None:
        import hashlib

        try:
            with open(self.source, "rb") as fh:
                return hashlib.sha256(fh.read()).hexdigest()[:16]
        except OSError:
            return None

    def path_for(self, digest: str) -> str:
        return os.path.join(directory(), self.prefix + digest + self.suffix)

    @functools.cached_property
    def expected(self) -> str | None:
        """Where this process's source's build would be (the source is read once)."""
        if not sys.platform.startswith("linux"):
            return None
        digest = self._digest()
        return None if digest is None else self.path_for(digest)

    def current(self, mode: int = os.R_OK) -> str | None:
        """The build of this source when it exists (and allows `mode`), else None."""
        path = self.expected
        return path if path is not None and os.access(path, mode) else None

    def build(self, cc: str) -> str | None:
        """Compile the source unless its build exists; its path, or None when it already
        did. Raises subprocess.CalledProcessError (with the compiler's output) or OSError."""
        digest = self._digest()
        if digest is None:
            raise OSError(f"no source at {self.source}")
        path = self.path_for(digest)
        if os.access(path, os.R_OK):
            return None
        os.makedirs(directory(), exist_ok=True)
        staging = f"{path}.{os.getpid()}.new"
        # No -Werror: a newer compiler's new warnings must not cost the build.
        command = [cc, "-O2", "-Wall", *self.flags, "-o", staging, self.source]
        try:
            static = self.static and subprocess.run(
                [*command, "-static"], capture_output=True).returncode == 0
            if not static:
                subprocess.run(command, check=True, capture_output=True, text=True)
            os.replace(staging, path)
        finally:
            if os.path.exists(staging):
                os.unlink(staging)
        for name in os.listdir(directory()):  # earlier sources' builds
            if name.startswith(self.prefix) and os.path.join(directory(), name) != path:
                os.unlink(os.path.join(directory(), name))
        self.__dict__.pop("expected", None)
        return path
