"""Landlock's ABI version on this kernel (shown by `acpd sandbox status` and doctor).

Landlock is not used to confine commands, by choice (docs/sandbox.md, "Why bubblewrap"): it
only grants access (a file under a readable workspace cannot be denied, `.git/hooks` under a
writable one cannot be made read-only), it has no PID namespace (a `setsid` child outlives a
cancel), and its network rules cover TCP only. This module only asks the kernel the version.
"""

from __future__ import annotations

import ctypes
import platform

_SYSCALL = {"x86_64": 444, "aarch64": 444, "arm64": 444}
_CREATE_RULESET_VERSION = 1


def landlock_abi() -> int:
    """The ABI version (0 when Landlock is missing or disabled)."""
    number = _SYSCALL.get(platform.machine())
    if number is None:
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(number, None, ctypes.c_size_t(0),
                               ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return int(version) if version > 0 else 0
