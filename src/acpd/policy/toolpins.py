"""Toolchain pins a version query obeys: `cargo --version` can run workspace code.

`cargo`, `rustc` are usually rustup proxies: a `rust-toolchain(.toml)` in the directory or any
ancestor names the toolchain they run, and `[toolchain] path = "/abs/dir"` makes the proxy exec
`dir/bin/cargo` (red-team B1c: a workspace file with its exec bit set by `git add --chmod=+x`
and a stash). `go` with `GOTOOLCHAIN=auto` (the default) downloads and runs the toolchain a
`go.mod`/`go.work` `go`/`toolchain` line asks for. asdf and mise shims take a `path:` version
from `.tool-versions` / `mise.toml` for every tool they shim (python, node, npm...). So a
version query of such a tool, when one of these files is present in the working directory or an
ancestor, runs what the workspace chose: it is judged like a build (allowed when the workspace is
trusted or the command runs sandboxed, ask otherwise; commands.py decides).

What stays free: `python3 --version`, `node -v`, `pip --version` where no asdf/mise file is
present (pyenv, rbenv and nodenv pins hold version names only: pyenv refuses `../`), and every
version query in a trusted workspace or under the sandbox. The variables that point version
managers at other hook or plugin directories (`PYENV_HOOK_PATH`, `ASDF_DATA_DIR`, ...) are in
the assignment blocklist.

Rules: each directory from the working directory up to the workspace root holding it (up to
`/` when it is outside every root; at most MAX_UP) is looked at with
one `os.stat` per pin name, on every decision (nothing cached); a stat that fails other than
"not there" counts as present (cannot tell). A pin above the workspace (the user's own
`~/.tool-versions`) is the user's choice, not the workspace's: it does not count.
"""

from __future__ import annotations

import os
from typing import Final

from acpd.policy import pathtext
from acpd.policy.sandbox import inside

MAX_UP: Final = 64
MANAGERS: Final = (".tool-versions", ".mise.toml", "mise.toml", ".mise.local.toml",
                   "mise.local.toml", ".mise/config.toml", ".config/mise.toml",
                   ".config/mise/config.toml", ".rtx.toml")
_RUST: Final = ("rust-toolchain", "rust-toolchain.toml", *MANAGERS)
_GO: Final = ("go.mod", "go.work", *MANAGERS)
PINNED: dict[str, tuple[str, ...]] = {
    "cargo": _RUST, "rustc": _RUST, "rustup": _RUST, "rustdoc": _RUST, "go": _GO,
    **{name: MANAGERS for name in ("python", "python3", "pip", "pip3", "node", "npm", "npx",
                                   "ruby", "gem", "java", "deno", "bun", "yarn", "pnpm")},
}
"""Programs version managers may proxy, and the files that choose what they run."""


def pin_finding(program: str, cwds: list[str], roots: tuple[str, ...]) -> str | None:
    """Why `program` run in one of `cwds` would run a toolchain the workspace chose."""
    names = PINNED.get(program)
    if names is None:
        return None
    seen: set[str] = set()
    for cwd in cwds:
        cur = cwd
        within = inside(cwd, roots) is not None
        for _ in range(MAX_UP):
            if cur in seen or (within and inside(cur, roots) is None):
                break
            seen.add(cur)
            for name in names:
                pin = pathtext.join(cur, name)
                try:
                    os.stat(pin)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                except (OSError, ValueError):
                    pass  # cannot tell: counts as present
                return (f"{program} may run the toolchain {pin} names (a version manager "
                        "proxy); the workspace is not trusted")
            parent = pathtext.dirname(cur)
            if parent == cur:
                break
            cur = parent
    return None
