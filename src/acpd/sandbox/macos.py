"""A `sandbox-exec` (Seatbelt) profile for a `Confinement` (macOS).

NOT exercised on the Linux machines this project is tested on: the unit tests check the
profile's text only. Seatbelt is deprecated but still shipped; Codex CLI and Anthropic's
sandbox-runtime use it the same way. What it gives: writes only under the roots, the write
paths and a per-command temp dir; reads of masked files and directories denied; read-only
paths denied for writing; network denied unless allowed. What it does not: there is no PID
namespace, so a process that leaves the command's process group survives a cancel.
"""

from __future__ import annotations

from acpd.sandbox.profile import Confinement


def quote(path: str) -> str:
    """A Seatbelt string literal."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(conf: Confinement, tmpdir: str) -> str:
    lines = ["(version 1)", "(deny default)", "(allow process-exec)", "(allow process-fork)",
             "(allow signal (target same-sandbox))", "(allow sysctl-read)",
             "(allow mach-lookup)", "(allow ipc-posix-shm)", "(allow file-read*)",
             '(allow file-write* (literal "/dev/null") (literal "/dev/tty")'
             ' (regex #"^/dev/fd/"))']
    writable = [*conf.roots, *conf.write_paths, tmpdir]
    lines.append("(allow file-write* " + " ".join(f"(subpath {quote(p)})" for p in writable)
                 + ")")
    if conf.read_only:
        lines.append("(deny file-write* " + " ".join(_rule(p) for p in conf.read_only) + ")")
    if conf.stub_files:  # no mount point needed: the path just cannot be created
        lines.append("(deny file-write* " + " ".join(f"(literal {quote(p)})"
                                                     for p in conf.stub_files) + ")")
    masked = [f"(literal {quote(p)})" for p in conf.mask_files]
    masked += [f"(subpath {quote(p)})" for p in conf.mask_dirs]
    if masked:
        lines.append("(deny file-read* file-write* " + " ".join(masked) + ")")
    if conf.network:
        lines.append("(allow network*)")
    else:
        lines.append("(deny network*)")
    return "\n".join(lines) + "\n"


def _rule(path: str) -> str:
    # A read-only path may be a file (config) or a directory (hooks): cover both.
    return f"(literal {quote(path)}) (subpath {quote(path)})"


def seatbelt_argv(binary: str, conf: Confinement, tmpdir: str, command: list[str]) -> list[str]:
    return [binary, "-p", seatbelt_profile(conf, tmpdir), "/usr/bin/env", f"TMPDIR={tmpdir}",
            *command]
