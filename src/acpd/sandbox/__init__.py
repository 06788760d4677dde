"""The kernel sandbox beneath the policy: every bash command, on both paths, runs confined.

The policy decides what needs a human; the sandbox enforces the path policy whatever a command
does: the file system is read-only except the workspace roots, a private /tmp and the
policy's real `write_roots`; `deny_read` matches are masked; git hooks, config and info are
read-only; the network is off unless `allow_network`; every process the command starts
lives in the sandbox's PID namespace and dies with it. docs/sandbox.md states the guarantees
and the limits.

- `PathRules` (rules.py): what the runner takes from the policy.
- `build_confinement` (build.py): a `Confinement` (profile.py) for one command, built fresh.
- `sandbox_status()` (status.py): whether and which sandbox this machine has.
- `bash_argv` / `exec_main` (launch.py): the local runner's argv; `acpd sandbox exec` (a JSON
  profile). The editor path runs a bash launcher instead (daemon/confine.py `LAUNCHER`).
- `inotify.py`, `watched.py`: directory watches (shared with the checkpoints); the walk's use.

This package imports nothing from the daemon, the tools or the policy (the launcher starts on
every editor-terminal command and must stay light).
"""

import importlib

__all__ = ["Confinement", "PathRules", "SandboxStatus", "build_confinement", "sandbox_status"]

_HOME = {"build_confinement": "build", "Confinement": "profile", "PathRules": "rules",
         "SandboxStatus": "status", "sandbox_status": "status"}


def __getattr__(name: str) -> object:
    # Lazy, and no `typing` import: the launcher (`python -m acpd.sandbox exec`) loads only
    # what it uses. Code imports from the submodules (typed); this is for interactive use.
    if name not in _HOME:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"acpd.sandbox.{_HOME[name]}"), name)
