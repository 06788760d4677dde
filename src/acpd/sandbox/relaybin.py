"""The editor path's relay client (`relay.c`): where it is built, and whether it is current.

`scripts/build_native.py` compiles `relay.c` into `<sys.prefix>/acpd-native/acpd-relay-<digest>`
(cbuild.py), the digest being that of the source: an edited source names another file, so a
stale client is never run. Without one (no C compiler, a non-editable install without the
source, not Linux) the daemon's editor path runs the sh launcher (daemon/confine.py), at
bubblewrap's cost per command. `ACPD_RELAY=off` does the same (the benchmark's named
baseline).
"""

from __future__ import annotations

import os

from acpd.cbuild import CBuild

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.c")
SWITCH_ENV = "ACPD_RELAY"
# Static where the C library allows it: no dynamic loader at each start (about 0.2 ms of the
# 0.5 ms the client takes to run).
CLIENT = CBuild(SOURCE, "acpd-relay-", static=True)


def client() -> str | None:
    """The built client for this source, or None (then the sh launcher runs). Looked for
    at each command: a rebuild after an edit of relay.c removes this one."""
    if os.environ.get(SWITCH_ENV, "").lower() in ("off", "0", "no", "false"):
        return None
    return CLIENT.current(os.X_OK)


def build(cc: str) -> str | None:
    """Compile the client unless the current one exists (cbuild.CBuild.build)."""
    return CLIENT.build(cc)
