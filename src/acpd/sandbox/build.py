"""Build a `Confinement` for one command from the workspace roots, the policy's path rules and
HOME. Fresh every time: a file the previous command created must be masked for the next one,
so nothing found on disk is kept between calls (compiled patterns are, they are not facts).

What is enforced where:
- `deny_read`: relative and `**/` patterns inside every workspace root (the bounded walk, see
  walk.py); absolute and `~/` patterns wherever they point (a literal path or directory is
  masked directly, a glob is walked from its literal prefix). `**/` patterns outside the
  roots cannot be found without walking the whole disk: the note says so.
- Hard links: every other name a denied file has inside the roots is masked as well; names
  outside them make the profile incomplete (links.py).
- Symlinks inside a masked directory (`~/.aws/credentials -> ~/dotfiles/aws/credentials`,
  stow's per-file links): what each points to is masked as well, wherever it lies (links.py).
  A masked directory that is a root or holds one (a pattern naming the workspace, a denied
  link to `/`) is not masked: the profile is incomplete. Every masked path is masked again
  where another mount of the same file system shows it (a bind mount of the workspace
  elsewhere: aliases.py).
- `deny_write`: inside writable places only (everything else is read-only anyway).
- Git hooks: every hooks directory git may use for each repository found (`core.hooksPath`
  included), what hooks link to, the configs git includes: read-only or uncreatable where they
  lie in a writable place, their parents pinned (hooks.py); what cannot be told or kept makes
  the profile incomplete.
- `write_roots`: `X/**` or `X` naming a real directory is bound writable; `/tmp` is the
  command's private tmpfs instead of the shared one; globs elsewhere are not enforceable.
- HOME caches (`CACHE_DIRS`: ~/.cache or $XDG_CACHE_HOME, ~/.npm, cargo's registry and git
  checkouts, Go's module cache, Maven's and Gradle's) are writable when they exist, so
  `pip install -e .`, `npm ci` or `cargo build` work, unless `deny_write` names them (or
  covers them) or `ACPD_SANDBOX_CACHES=off`. A cache can hold code that runs later outside
  the sandbox (a poisoned wheel, a crate's build script): docs/sandbox.md says so.
- Programs on PATH under /tmp (a checkout's `.venv/bin`, `node_modules/.bin`) would vanish
  behind the private /tmp: their directory (the `bin`'s parent) is bound back read-only.
- `hidden` (the daemon's data directory: checkpoint blobs are copies of workspace files,
  `deny_read` ones included; sessions and the audit log hold what was said) is an empty tmpfs.
- Sockets: a path-named unix socket can be connected to through a read-only mount (a session
  bus, a container engine, an ssh agent can run code outside the sandbox), so `/run`, the
  user's XDG_RUNTIME_DIR and /tmp (private) are hidden. With `allow_network`, the resolver's
  directory under /run is bound back read-only.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence

from acpd.sandbox.aliases import aliases, read_mounts
from acpd.sandbox.hooks import keep_hooks
from acpd.sandbox.links import linked_names
from acpd.sandbox.paths import real_dir, real_path
from acpd.sandbox.profile import Confinement
from acpd.sandbox.rules import (
    Matcher,
    PathRules,
    compile_matcher,
    expand_home,
    has_glob,
    literal_prefix,
)
from acpd.sandbox.walk import Found, mask_target, walk_pattern_prefix, walk_root

WALK_LIMIT = 100_000
"""Entries visited per command before the walk gives up (and says the profile is incomplete)."""
MASK_LIMIT = 1800
"""Masks (files and directories together) applied at most; past it the profile is
incomplete. bubblewrap refuses more than 9000 arguments in all (a file mask takes 3, a
directory mask 4): every command would fail, a denial of service by decoy files."""
READ_ONLY_LIMIT = 400
"""Read-only binds (3 arguments each) applied at most; past it the profile is incomplete."""
SOCKET_DIRS = ("/run",)
CACHE_DIRS = ("~/.npm", "~/.cargo/registry", "~/.cargo/git", "~/go/pkg/mod", "~/.m2/repository",
              "~/.gradle/caches")
"""Writable in the sandbox when they exist (besides $XDG_CACHE_HOME or ~/.cache)."""
CACHES_ENV = "ACPD_SANDBOX_CACHES"
GIT_ENV = "ACPD_SANDBOX_GIT"
"""`read-only`: every command gets read-only git directories (`PathRules.git_writes` False)."""


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...], home: str) -> Matcher:
    return compile_matcher(patterns, home)


def build_confinement(
    roots: Sequence[str], rules: PathRules, *, cwd: str, home: str | None = None,
    walk_limit: int = WALK_LIMIT, hidden: Sequence[str] = (),
) -> Confinement:
    """The confinement for one command run in `cwd` (inside one of `roots`). `hidden`:
    directories masked whole whatever the policy says (the daemon's data directory).

    Raises ValueError when no root is an existing directory.
    """
    home = home if home is not None else os.path.expanduser("~")
    real_roots = _real_dirs(roots)
    if not real_roots:
        raise ValueError("no workspace root is an existing directory")
    deny_read = _matcher(rules.deny_read, home)
    deny_write = _matcher(rules.deny_write, home)
    found = Found()
    notes: list[str] = []
    for root in real_roots:
        walk_root(root, deny_read, deny_write, found, walk_limit)
    _absolute_masks(rules.deny_read, home, deny_read, found, notes, walk_limit)
    linked = linked_names(found, _outermost(
        [d for d in found.mask_dirs if not _holds_root(d, real_roots)]), real_roots)
    found.mask_files += linked.masks
    found.mask_dirs += linked.mask_dirs
    notes += linked.notes
    if found.mask_files or found.mask_dirs:
        mounts = read_mounts()
        found.mask_files += aliases(found.mask_files, mounts)
        found.mask_dirs += aliases(found.mask_dirs, mounts)
    write_paths = _write_paths(rules.write_roots, home, real_roots, notes)
    write_paths = _dedupe([*write_paths, *_caches(home, real_roots, deny_write)])
    for path in _absolute_literals(rules.deny_write, home):
        if _under_any(path, (*real_roots, *write_paths)) and os.path.exists(path):
            found.read_only.append(real_path(path))
    socket_dirs, reexpose = _socket_dirs(real_roots, rules.allow_network)
    socket_dirs += _hidden_dirs(hidden, real_roots, notes)
    tool_dirs = _tmp_tool_dirs(os.environ.get("PATH", ""), real_roots)
    if found.truncated:
        notes.append(f"the workspace walk stopped after {walk_limit} entries: files past it "
                     "that deny_read names are not masked")
    git_writes = rules.git_writes and os.environ.get(GIT_ENV, "").lower() != "read-only"
    kept = keep_hooks(found, real_roots, (*real_roots, *write_paths), home, git_writes)
    notes += kept.notes
    # What git runs later first: past READ_ONLY_LIMIT, deny_write matches are dropped first.
    found.read_only[:0] = kept.read_only
    fixed = (*found.read_only, *(() if git_writes else found.git_dirs))
    back = () if git_writes else tuple(found.git_writable)
    empty_dirs = _creatable([*found.empty_dirs, *kept.empty_dirs], fixed, back)
    # A directory holding a root cannot be masked (the workspace would vanish). Dropped before
    # `_outermost`: kept there, it would stand for every mask beneath it (`x.pem -> /` in the
    # workspace would have unmasked ~/.ssh, /run and acpd's data).
    candidates = [*found.mask_dirs, *empty_dirs, *socket_dirs]
    hiding_root = sorted({d for d in candidates if _holds_root(d, real_roots)})
    if hiding_root:
        notes.append(f"deny_read names the workspace itself or a directory holding it "
                     f"({hiding_root[0]}): not masked")
    mask_dirs = _outermost([d for d in candidates if not _holds_root(d, real_roots)])
    mask_files = _outside(found.mask_files, mask_dirs)
    read_only = _outside(found.read_only, mask_dirs)
    stub_files = _outside(_creatable(kept.stub_files, fixed, back), mask_dirs)
    git_dirs = set(found.git_dirs)
    hook_pins = tuple(p for p in sorted(_outside(kept.pins, mask_dirs), key=len)
                      if p not in git_dirs)
    masks = len(mask_files) + len(mask_dirs)
    binds = len(read_only) + len(stub_files) + len(hook_pins)
    within = masks <= MASK_LIMIT and binds <= READ_ONLY_LIMIT
    if masks > MASK_LIMIT:
        notes.append(f"{masks} deny_read matches to mask: only the first {MASK_LIMIT} are "
                     "(bubblewrap takes no more arguments)")
    if binds > READ_ONLY_LIMIT:
        notes.append(f"{binds} paths to make read-only: only the first "
                     f"{READ_ONLY_LIMIT} are")
    mask_dirs = mask_dirs[:MASK_LIMIT]
    git_pins = _outside(found.git_dirs, mask_dirs)
    room = max(0, READ_ONLY_LIMIT - len(read_only))
    pinned = (*git_pins, *hook_pins[:max(0, room - len(stub_files))])
    return Confinement(
        cwd=real_path(cwd),
        roots=real_roots,
        write_paths=write_paths,
        pinned=pinned,
        git_read_only=git_pins if not git_writes else (),
        git_writable=_outside(found.git_writable, mask_dirs) if not git_writes else (),
        read_only=read_only[:READ_ONLY_LIMIT],
        stub_files=stub_files[:room],
        mask_files=mask_files[:max(0, MASK_LIMIT - len(mask_dirs))],
        mask_dirs=mask_dirs,
        reexpose=reexpose,
        tool_dirs=tool_dirs,
        network=rules.allow_network,
        complete=(not found.truncated and within and linked.complete and kept.complete
                  and not hiding_root),
        notes=tuple(notes),
        walked=found.walked,
    )


def _absolute_masks(patterns: tuple[str, ...], home: str, matcher: Matcher, found: Found,
                    notes: list[str], limit: int) -> None:
    for raw in patterns:
        text = expand_home(raw, home)
        if text.startswith("**/"):
            continue  # matched by the walk inside the roots only (docs/sandbox.md)
        if not text.startswith("/"):
            continue
        if not has_glob(text):
            mask_target(text, found)
            continue
        base = text.removesuffix("/**")
        if not has_glob(base):
            mask_target(base, found)
            continue
        prefix = literal_prefix(text)
        if prefix == "/proc" or prefix.startswith("/proc/"):
            continue  # the sandbox has its own /proc: only its own processes are in it
        if prefix.count("/") < 2:
            notes.append(f"deny_read {raw!r} is too broad to mask (it would walk {prefix})")
            continue
        walk_pattern_prefix(prefix, matcher, found, limit)


def _hidden_dirs(paths: Sequence[str], roots: tuple[str, ...], notes: list[str]) -> list[str]:
    out = []
    for path in paths:
        real = real_dir(path)
        if real is None:
            continue
        if any(_under_any(root, (real,)) for root in roots):
            notes.append(f"{real} (acpd's data) holds the workspace: it is not hidden")
            continue
        out.append(real)
    return out


def _tmp_tool_dirs(path_var: str, roots: tuple[str, ...]) -> tuple[str, ...]:
    """The PATH entries under /tmp that the private /tmp would hide, as the directory that
    holds each one's programs and their libraries: a `bin` or `.bin` entry's parent (a
    virtual environment, a node_modules), any other entry itself. Entries inside a workspace
    root are there already (each root is bound). Read-only: nothing under them is written."""
    out: list[str] = []
    for entry in path_var.split(os.pathsep):
        if not entry.startswith("/"):
            continue
        real = real_dir(entry)
        if real is None or not real.startswith("/tmp/") or _under_any(real, roots):
            continue
        base = os.path.dirname(real) if os.path.basename(real) in ("bin", ".bin") else real
        if base != "/tmp":
            out.append(base)
    return _outermost(out)


def _write_paths(patterns: tuple[str, ...], home: str, roots: tuple[str, ...],
                 notes: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for raw in patterns:
        text = expand_home(raw, home).removesuffix("/**").rstrip("/") or "/"
        if not text.startswith("/"):
            continue  # relative to a root: inside it, writable already
        if has_glob(text):
            notes.append(f"write_roots {raw!r} is a glob: not writable in the sandbox")
            continue
        real = real_dir(text)
        if real == "/tmp":
            continue  # the command's private /tmp stands for it
        if real is None or real == "/" or _under_any(real, roots):
            continue
        out.append(real)
    return _dedupe(out)


def _caches(home: str, roots: tuple[str, ...], deny_write: Matcher) -> list[str]:
    if os.environ.get(CACHES_ENV, "").lower() in ("off", "0", "no", "false", "none"):
        return []
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    wanted = [xdg if xdg.startswith("/") else "~/.cache", *CACHE_DIRS]
    out = []
    real_home = real_path(home)
    for raw in wanted:
        real = real_dir(expand_home(raw, home))
        if real is None or real in ("/", real_home) or _under_any(real, roots):
            continue
        if deny_write.match(real, None) or deny_write.covers_subtree(real, None):
            continue
        out.append(real)
    return out


def _absolute_literals(patterns: tuple[str, ...], home: str) -> list[str]:
    out = []
    for raw in patterns:
        text = expand_home(raw, home).removesuffix("/**")
        if text.startswith("/") and not has_glob(text):
            out.append(text)
    return out


def _socket_dirs(roots: tuple[str, ...], network: bool) -> tuple[list[str], tuple[str, ...]]:
    candidates = [*SOCKET_DIRS, os.environ.get("XDG_RUNTIME_DIR", "")]
    dirs = []
    for path in candidates:
        real = real_dir(path)
        # A root inside one (a workspace under /run) keeps it visible: it is bound anyway.
        if real is not None and real != "/" and not any(
                _under_any(root, (real,)) for root in roots):
            dirs.append(real)
    reexpose: list[str] = []
    if network:
        resolver = os.path.dirname(os.path.realpath("/etc/resolv.conf"))
        if _under_any(resolver, tuple(dirs)) and os.path.isdir(resolver):
            reexpose.append(resolver)
    return dirs, tuple(reexpose)


def _real_dirs(paths: Sequence[str]) -> tuple[str, ...]:
    return _dedupe(real for real in map(real_dir, paths) if real is not None)


def _outside(paths: Iterable[str], dirs: Sequence[str]) -> tuple[str, ...]:
    """`paths` (deduplicated) that lie under none of `dirs`: a set lookup per ancestor, not a
    comparison per pair (thousands of decoy masks against hundreds of masked directories)."""
    every = set(dirs)
    kept = []
    for path in dict.fromkeys(paths):
        cur = path
        while cur not in every and cur not in ("/", ""):
            cur = os.path.dirname(cur)
        if cur not in every:
            kept.append(path)
    return tuple(kept)


def _creatable(paths: Iterable[str], fixed: Sequence[str], writable: Sequence[str]
               ) -> list[str]:
    """Missing mount points (an empty hooks directory, a stub) that can be made: not under
    a read-only place (`fixed`, unless under one of `writable` in it), where bubblewrap could
    not create them and every command would fail; nothing can be created there anyway."""
    every = set(fixed)
    out = []
    for path in paths:
        cur = path
        while cur not in every and cur not in ("/", ""):
            cur = os.path.dirname(cur)
        if cur not in every or _under_any(path, writable):
            out.append(path)
    return out


def _holds_root(directory: str, roots: Sequence[str]) -> bool:
    return any(_under_any(root, (directory,)) for root in roots)


def _under_any(path: str, parents: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in parents)


def _outermost(paths: list[str]) -> tuple[str, ...]:
    """Sorted, without a path that lies under another one in the list."""
    every = set(paths)
    kept = []
    for path in sorted(every):
        parent, ancestors = path, []
        while parent not in ("/", ""):
            parent = os.path.dirname(parent)
            ancestors.append(parent)
        if not any(a in every for a in ancestors):
            kept.append(path)
    return tuple(kept)


def _dedupe(paths: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paths))
