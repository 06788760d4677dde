"""Wrap a command in the sandbox; `acpd sandbox exec`, the JSON-profile launcher.

`confined_argv` gives the argv that runs a command confined (the local runner spawns it
directly: no Python in between). The daemon's editor path no longer starts Python per command
(daemon/confine.py `LAUNCHER`: bash execs bubblewrap with a prebuilt argv); `exec_main` stays for
scripts: `acpd sandbox exec --profile FILE -- CMD...`
(also `python -P -m acpd.sandbox exec ...`): it reads the profile, deletes the file, and
execs bubblewrap around CMD, so the pid the editor holds is bubblewrap's and its
`terminal/kill` ends the whole sandbox. It imports only this package (start-up is on every
command's path). With no sandbox available it refuses (exit 125) unless told
`--allow-unsandboxed`, and says so on stderr either way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from acpd.sandbox.bwrap import bwrap_argv, find_bwrap, open_pins
from acpd.sandbox.macos import seatbelt_argv
from acpd.sandbox.profile import Confinement
from acpd.sandbox.status import OFF_WORDS, SWITCH_ENV, SandboxStatus, sandbox_status

REFUSED = 125
"""Exit code when the command was not run because it could not be confined."""


class Unconfined(Exception):
    """No sandbox here; the message says why."""


def confined_argv(conf: Confinement, command: Sequence[str],
                  status: SandboxStatus | None = None,
                  pins: dict[str, int] | None = None) -> list[str]:
    """Raises Unconfined when this machine has no usable sandbox. `pins`: see open_pins."""
    status = status or sandbox_status()
    if not status.available or status.binary is None:
        raise Unconfined(status.reason)
    if status.kind == "bwrap":
        return bwrap_argv(status.binary, conf, command, pins)
    # The workspace's private temp directory when the daemon made one (it removes it);
    # otherwise one per command, which only `acpd sandbox run` and scripts reach.
    tmpdir = conf.tmp_dir
    if not tmpdir:
        import tempfile

        tmpdir = tempfile.mkdtemp(prefix="acpd-sbx-")
    return seatbelt_argv(status.binary, conf, tmpdir, list(command))


def bash_argv(conf: Confinement | None, command: str, status: SandboxStatus | None = None,
              pins: dict[str, int] | None = None) -> list[str]:
    """`bash -c COMMAND`, confined when `conf` is given."""
    plain = ["bash", "-c", command]
    return plain if conf is None else confined_argv(conf, plain, status, pins)


def launcher_status() -> SandboxStatus:
    """The launcher's view: the switch and the binary, without the probe's extra process
    (the daemon probed before it chose this path; a failure here still fails closed)."""
    if os.environ.get(SWITCH_ENV, "").lower() in OFF_WORDS:
        return SandboxStatus(False, "none", f"switched off by {SWITCH_ENV}")
    if sys.platform == "darwin":
        return sandbox_status()
    binary, origin = find_bwrap()
    if binary is None:
        return SandboxStatus(False, "none", origin)
    return SandboxStatus(True, "bwrap", origin, binary)


USAGE = "usage: acpd sandbox exec --profile FILE [--allow-unsandboxed] -- CMD [ARG...]"


def exec_main(args: Sequence[str]) -> int:
    """Parse, confine, exec. Returns only on failure (the exit code)."""
    profile, allow, command = _parse(list(args))
    if profile is None or not command:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        with open(profile, encoding="utf-8") as handle:
            text = handle.read()
        os.unlink(profile)  # one use: a profile is for the command it was built for
        conf = Confinement.from_json(text)
    except (OSError, ValueError) as exc:
        print(f"acpd sandbox: cannot read the profile: {exc}", file=sys.stderr)
        return REFUSED
    status = launcher_status()
    pins = open_pins(conf) if status.kind == "bwrap" else {}
    for fd in pins.values():
        os.set_inheritable(fd, True)
    try:
        argv = confined_argv(conf, command, status, pins)
    except Unconfined as exc:
        if not allow:
            print(f"acpd sandbox: NOT RUN: no sandbox here ({exc})", file=sys.stderr)
            return REFUSED
        print(f"acpd sandbox: WARNING: running UNSANDBOXED ({exc})", file=sys.stderr)
        argv = list(command)
        os.chdir(conf.cwd)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"acpd sandbox: cannot run {argv[0]}: {exc}", file=sys.stderr)
    return REFUSED


def _parse(args: list[str]) -> tuple[str | None, bool, list[str]]:
    profile, allow = None, False
    while args:
        word = args.pop(0)
        if word == "--":
            return profile, allow, args
        if word == "--profile" and args:
            profile = args.pop(0)
        elif word.startswith("--profile="):
            profile = word.split("=", 1)[1]
        elif word == "--allow-unsandboxed":
            allow = True
        else:
            return None, allow, []
    return profile, allow, []
