"""Path checks for the shell: reads and writes judged against the workspace roots and the
deny lists. Lexical and resolved (realpath) forms must both pass; glob words (`cat .en?`) are
checked against what the deny patterns could name, without touching the file system.

No file-system fact is cached across decisions: every path (and every workspace root) is
resolved again each time it is judged, so a symlink that appears between two decisions is
judged on what it points to now. Only pure computations (compiled patterns) are cached."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Final

from acpd.pathglob import glob_regex
from acpd.policy import globmatch, pathtext
from acpd.policy.budget import current_slot, publish_memo
from acpd.policy.decision import Verdict
from acpd.policy.gitdirs import git_dir_write
from acpd.policy.words import DYN

if TYPE_CHECKING:
    from acpd.policy.gitobjects import LineRecord
    from acpd.policy.hookdirs import Found

_DEV_FD: Final = re.compile(r"/dev/fd/\d+")
REDIRECT_DEVICES: Final = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin",
                                     "/dev/tty", "/dev/zero", "/dev/random", "/dev/urandom"})
_GLOB: Final = re.compile(r"[*?\[]")
_BRACKET_EXPR: Final = re.compile(r"\[[^\]]*\]")


@dataclass(frozen=True, slots=True)
class PathPattern:
    text: str
    anchor: str
    """abs: matched against the absolute path; any: anywhere (`**/` prefix); rel: per root."""
    regex: re.Pattern[str]
    parts: tuple[str, ...]
    """Components, for deciding whether a glob word could name something the pattern denies."""
    literal: str = ""
    """Text (lower case) every path the pattern matches holds, in any case; "" when none is
    known (see `_required_literal`)."""


_GLOB_OPERATOR: Final = re.compile(r"\*\*/|\*|\?")
"""What `glob_regex` turns into a wildcard (`**/` may stand for nothing at all)."""


def _required_literal(body: str) -> str:
    """The longest run of plain characters of the glob `body`, lower-cased: a path the
    pattern matches holds it. "" (nothing to rely on) for a bracket expression or a body
    outside ASCII (`re.IGNORECASE` folds some other letters onto ASCII ones: U+017F on `s`)."""
    if "[" in body or not body.isascii():
        return ""
    return max(_GLOB_OPERATOR.split(body), key=len).lower()


@lru_cache(maxsize=256)
def compile_patterns(patterns: tuple[str, ...], home: str) -> tuple[PathPattern, ...]:
    out: list[PathPattern] = []
    for pat in patterns:
        text = pat
        if text.startswith("~/") or text == "~":
            text = home + text[1:]
        if text.startswith("/"):
            anchor, body = "abs", text
        elif text.startswith("**/"):
            anchor, body = "any", text[3:]
        else:
            anchor, body = "rel", text
        body_re = glob_regex(body)
        regex = re.compile(
            ("^" if anchor != "any" else "(?:^|.*/)") + body_re + "$", re.IGNORECASE | re.DOTALL
        )
        parts = tuple(p for p in body.split("/") if p and p != "**")
        out.append(PathPattern(pat, anchor, regex, parts, _required_literal(body)))
    return tuple(out)


def resolved_variants(patterns: tuple[str, ...], home: str) -> tuple[str, ...]:
    """For each pattern anchored at HOME or `/` whose literal leading directories pass
    through a symbolic link (`~/.aws -> ~/dotfiles/aws`, HOME itself a link), the same
    pattern on the real directories: a file's real path then matches it. Read now (a
    resolution per pattern): the caller must not keep the result past one call."""
    out: list[str] = []
    for pat in patterns:
        text = home + pat[1:] if pat.startswith("~/") else pat
        if not text.startswith("/"):
            continue
        parts = text.split("/")
        literal = 0
        while literal < len(parts) and not _GLOB.search(parts[literal]):
            literal += 1  # (a pattern without a glob is resolved whole: `~/.bashrc` a link)
        prefix = "/".join(parts[:literal]) or "/"
        real = os.path.realpath(prefix)
        if real != prefix:
            out.append("/".join([real.rstrip("/"), *parts[literal:]]))
        if literal < len(parts) and pat.startswith("~/") and prefix != home.rstrip("/"):
            out.extend(_linked_out(real))  # a HOME directory's files: links among them
    return tuple(out)


LINK_SCAN: Final = 512


def _linked_out(directory: str) -> list[str]:
    """Patterns for where the links under `directory` point (GNU stow links single files,
    `~/.aws/credentials -> ~/dotfiles/aws/credentials`, when `~/.aws` exists), at most
    LINK_SCAN entries looked at; past that the rest is not seen (the sandbox masks them)."""
    found: list[str] = []
    stack, seen = [directory], 0
    while stack and seen < LINK_SCAN:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    seen += 1
                    if seen > LINK_SCAN:
                        break
                    if entry.is_symlink():
                        target = _glob_literal(os.path.realpath(entry.path))
                        found += [target, target + "/**"]
                    elif entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return found


def _glob_literal(path: str) -> str:
    """`path` as a pattern that matches it: itself, `*` and `?` in a class; with a `[` (no
    class can hold one here), its longest directory without one, whole."""
    if "[" in path:
        return path[:path.index("[")].rpartition("/")[0] + "/**"
    return _GLOB.sub(lambda m: f"[{m.group(0)}]", path)


def inside(path: str, roots: tuple[str, ...]) -> str | None:
    """The root that contains `path` (both already absolute and normalized), or None."""
    for root in roots:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return root
    return None


class Prefilter:
    """All of a pattern list in two regexes (anchored anywhere/absolute, and per root): a path
    neither matches cannot match any pattern of the list, so `matches` need not run. Before
    a regex, which backtracks over the whole path once per pattern (microseconds a path),
    an ASCII path is searched for each pattern's required literal (`PathPattern.literal`):
    holding none of them, it matches no pattern."""

    __slots__ = ("absolute", "literals", "relative")

    def __init__(self, patterns: tuple[PathPattern, ...]) -> None:
        absolute = [p for p in patterns if p.anchor != "rel"]
        self.absolute = _union([p.regex for p in absolute])
        self.relative = _union([p.regex for p in patterns if p.anchor == "rel"])
        self.literals = _literals(absolute)
        """Of the absolute and anywhere patterns (the per-root regex is anchored at the
        start of the relative path: it fails fast on its own)."""

    def may_match(self, path: str, roots: tuple[str, ...]) -> bool:
        if self.absolute is not None and self._absolute_match(path):
            return True
        if self.relative is None:
            return False
        root = inside(path, roots)
        if root is None:
            return False
        rel = path[len(root.rstrip("/")) + 1 :] if path != root else "."
        return self.relative.match(rel) is not None

    def _absolute_match(self, path: str) -> bool:
        literals = self.literals
        if literals is not None and path.isascii():
            low = path.lower()
            for literal in literals:
                if literal in low:
                    break
            else:
                return False
        assert self.absolute is not None
        return self.absolute.match(path) is not None


def _literals(patterns: list[PathPattern]) -> tuple[str, ...] | None:
    """The required literals of every pattern, or None when one has none (or the patterns
    do not share the flags `_union` needs)."""
    if any(not p.literal for p in patterns) or len({p.regex.flags for p in patterns}) > 1:
        return None
    return tuple(dict.fromkeys(p.literal for p in patterns))


def _union(regexes: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    if not regexes:
        return None
    flags = {r.flags for r in regexes}
    if len(flags) != 1:  # not one regex: never filter anything out
        return re.compile("")
    return re.compile("|".join(f"(?:{r.pattern})" for r in regexes), flags.pop())


def matches(path: str, patterns: tuple[PathPattern, ...], roots: tuple[str, ...]) -> str | None:
    root = inside(path, roots)
    for pat in patterns:
        if pat.anchor == "rel":
            if root is None:
                continue
            rel = path[len(root.rstrip("/")) + 1 :] if path != root else "."
            if pat.regex.match(rel):
                return pat.text
        elif pat.regex.match(path):
            return pat.text
    return None


def _bash_fnmatch(name: str, glob: str) -> bool:
    """fnmatch, except a leading `*`/`?`/`[` does not match a leading dot (bash without
    dotglob)."""
    if name.startswith(".") and not glob.startswith("."):
        return False
    return globmatch.fnmatchcase(name.lower(), glob.lower())


def _sample(glob: str) -> str:
    return _BRACKET_EXPR.sub("x", glob).replace("*", "").replace("?", "x")


def _components_meet(arg: str, pat: str) -> bool:
    arg_glob, pat_glob = bool(_GLOB.search(arg)), bool(_GLOB.search(pat))
    if not arg_glob:
        return globmatch.fnmatchcase(arg.lower(), pat.lower()) if pat_glob else (
            arg.lower() == pat.lower())
    if not pat_glob:
        return _bash_fnmatch(pat, arg)
    return _bash_fnmatch(_sample(pat), arg) or globmatch.fnmatchcase(
        _sample(arg).lower(), pat.lower())


def glob_may_match(path: str, patterns: tuple[PathPattern, ...],
                   roots: tuple[str, ...], *, named_only: bool = False) -> str | None:
    """Could the glob word `path` (absolute, normalized) expand to a denied path?
    `named_only`: only patterns that end in a literal name (`**/.env`, not `**/*.pem` or
    `secrets/**`) count: the word matched nothing on disk and is passed as written, but it
    is aimed at a name the deny list names."""
    comps = [c for c in path.split("/") if c]
    root = inside(path, roots)
    for pat in patterns:
        m = len(pat.parts)
        if m == 0:
            continue
        if named_only and (pat.text.endswith("**") or _GLOB.search(pat.parts[-1])):
            continue
        if pat.anchor == "any":
            starts = range(len(comps) - m + 1)
            target = comps
        elif pat.anchor == "abs":
            starts = range(1)
            target = comps
        else:
            if root is None:
                continue
            target = [c for c in path[len(root.rstrip("/")) + 1 :].split("/") if c]
            starts = range(1)
        for s in starts:
            window = target[s : s + m]
            if len(window) < m:
                continue
            if all(_components_meet(a, p) for a, p in zip(window, pat.parts, strict=True)):
                return pat.text
    return None


_O_PATH: Final = getattr(os, "O_PATH", 0)
_FD_LINK: Final = "/proc/self/fd/" if pathtext.isdir("/proc/self/fd") else ""
_WALK_MAX: Final = 3
"""Components an lstat walk may take; a longer path costs the three calls of `_open_name`."""
_MEMO_MAX: Final = 4096
_lstat: Final = os.lstat
_os_open: Final = os.open
_readlink: Final = os.readlink
_close: Final = os.close
_OPEN_FLAGS: Final = _O_PATH | os.O_CLOEXEC
# (bound once: from compiled code each `os.x` is a module attribute look-up)
_S_IFMT: Final = 0o170000
_S_IFLNK: Final = stat.S_IFLNK

class _Decision:
    """The file-system memos of the decision running on a thread: they live exactly as long
    as the decision (no fact outlives it)."""

    __slots__ = ("hook_dirs", "hook_links", "line", "links", "memo", "stats")

    def __init__(self) -> None:
        self.memo: dict[str, str] = {}
        self.stats: dict[str, os.stat_result | None] = {}
        self.links: dict[tuple[int, int], object] = {}
        self.hook_dirs: dict[str, Found | str] | None = None
        """hookdirs.py: hooks directories by where git starts, read once per decision."""
        self.hook_links: dict[str, dict[str, str]] | None = None
        """hookdirs.py: the hooks that are links, by hooks directory."""
        self.line: LineRecord | None = None
        """gitobjects.py: what the line's commands did to git's objects."""


def open_decision() -> _Decision | None:
    """Start the resolved-path memo of one decision on this thread; return the previous
    memo for `close_decision` (a nested judge keeps the outer decision's memo). The memo
    holds `resolve` results only while one decision runs: no file-system fact outlives it."""
    slot = current_slot()
    previous = None if slot is None else slot.memo
    if previous is None:
        publish_memo(_Decision())
    return previous


def close_decision(previous: _Decision | None) -> None:
    publish_memo(previous)


def current_decision() -> _Decision | None:
    """The memos of the decision running on this thread, or None outside one."""
    slot = current_slot()
    return None if slot is None else slot.memo


def decision_links() -> dict[tuple[int, int], object] | None:
    """This decision's memo of hard-link scans (see `hardlinks`), or None outside one."""
    current = current_decision()
    return None if current is None else current.links


def file_stat(real: str) -> os.stat_result | None:
    """`os.stat` of a resolved path (None when missing), read at most once per decision: the
    lstat walk of `resolve` already holds it for a path that is no symbolic link."""
    current = current_decision()
    stats = None if current is None else current.stats
    if stats is not None and real in stats:
        return stats[real]
    try:
        st: os.stat_result | None = os.stat(real)
    except (OSError, ValueError):
        st = None
    if stats is not None and len(stats) < _MEMO_MAX:
        stats[real] = st
    return st


def resolve(path: str) -> str:
    """`os.path.realpath(path)`, read afresh for each decision (resolved at most once per
    decision: see `open_decision`)."""
    current = current_decision()
    if current is None:
        return _resolve(path, None)
    memo = current.memo
    real = memo.get(path)
    if real is None:
        real = _resolve(path, current)
        if len(memo) < _MEMO_MAX:
            memo[path] = real
    return real


def _resolve(path: str, current: _Decision | None) -> str:
    """realpath by the cheapest exact route: below a directory known (this decision) to be
    its own real path, or near `/`, an lstat per component, stopping at the first that does
    not exist (realpath keeps the rest as written); any symbolic link on the way, or a longer
    walk, goes to `_open_name`/realpath."""
    if not path.startswith("/") or "//" in path or path.endswith("/") or "\x00" in path or (
            "/." in path and _DOT_COMPONENT.search(path)):
        return _open_name(path)  # not a normal absolute path: no shortcut
    base, rest = "", path
    memo = None if current is None else current.memo
    if memo is not None:
        cut = len(path)
        for _ in range(_WALK_MAX):
            cut = path.rfind("/", 0, cut)
            if cut <= 0:
                break
            prefix = path[:cut]
            if memo.get(prefix) == prefix:
                base, rest = prefix, path[cut:]
                break
    if rest.count("/") > _WALK_MAX:
        return _open_name(path)
    cur = base
    found: os.stat_result | None = None
    for part in rest[1:].split("/"):
        cur = f"{cur}/{part}"
        try:
            found = _lstat(cur)
        except OSError:
            found = None  # missing (or unreadable): realpath keeps the rest as written
            break
        if found.st_mode & _S_IFMT == _S_IFLNK:  # (stat.S_ISLNK, without the call)
            return _open_name(path)
    if current is not None and len(current.stats) < _MEMO_MAX:
        current.stats[path] = found  # no link on the way: the last lstat is its stat (or missing)
    return path


def _open_name(path: str) -> str:
    """For a path that exists, open it with O_PATH and read the kernel's name for the
    descriptor (three system calls whatever the depth, where realpath makes one per
    component); else `os.path.realpath`."""
    if _O_PATH and _FD_LINK:
        try:
            fd = _os_open(path, _OPEN_FLAGS)
        except (OSError, ValueError):
            return os.path.realpath(path)
        try:
            real = _readlink(f"{_FD_LINK}{fd}")
        except OSError:
            real = ""
        finally:
            _close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real
    return os.path.realpath(path)


def cached_realpath(path: str) -> str:
    """`os.path.realpath`, never cached across decisions: a decision must see the file system
    as it is now (a symlink created between two decisions is followed by the second)."""
    return resolve(path)


def resolve_dir(path: str) -> str:
    """`resolve` for a directory that is expected to exist (a workspace root), read afresh
    for each decision as `resolve` is, by `_open_name` whatever its depth: its three system
    calls cost less than the lstat walk's stat results (about a third of the instructions
    for a root two levels down, and less time: 2.1 against 2.6 µs measured)."""
    current = current_decision()
    memo = None if current is None else current.memo
    real = None if memo is None else memo.get(path)
    if real is None:
        real = _open_name(path)  # (what `_resolve` does for any path but a short one)
        if memo is not None and len(memo) < _MEMO_MAX:
            memo[path] = real
    return real


def normalized_roots(roots: tuple[str, ...]) -> tuple[str, ...]:
    """Workspace roots resolved (realpath, read afresh for every decision) and normalized."""
    out = []
    for root in roots:
        real = resolve_dir(root)
        out.append(_normpath(real) if real.startswith("/") else pathtext.normpath(real))
    return tuple(out)


def clear_cache() -> None:
    """Nothing to clear any more (no file-system fact is cached); kept for callers."""


_DOT_COMPONENT: Final = re.compile(r"/\.\.?(?:/|$)")


def _normpath(path: str) -> str:
    """os.path.normpath of an absolute path, without the call when it is already normal (no
    empty, `.` or `..` component, no trailing slash). (A path that may not be: C's normpath
    outright, which costs less than a regex search to tell `./victim` from `.git`.)"""
    if "//" in path or path.endswith("/") or "/." in path:
        return pathtext.normpath(path)
    return path


@dataclass(frozen=True, slots=True)
class PathRules:
    roots: tuple[str, ...]
    deny_read: tuple[PathPattern, ...]
    deny_write: tuple[PathPattern, ...]
    read_roots: tuple[PathPattern, ...]
    write_roots: tuple[PathPattern, ...]
    outside_read: Verdict
    outside_write: Verdict
    read_filter: Prefilter = field(init=False, repr=False, compare=False)
    write_filter: Prefilter = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "read_filter", _prefilter(self.deny_read))
        object.__setattr__(self, "write_filter", _prefilter(self.deny_write))


@lru_cache(maxsize=64)
def _prefilter(patterns: tuple[PathPattern, ...]) -> Prefilter:
    """One Prefilter per pattern list (its union regex takes milliseconds to compile; the
    same lists come back for every workspace root)."""
    return Prefilter(patterns)


_HardlinkFinding = Callable[[str, str, PathRules], "tuple[Verdict, str, str] | None"]
_hardlink_finding: list[_HardlinkFinding] = []


def _hardlinks() -> _HardlinkFinding:
    """`hardlinks.hardlink_finding` (that module imports this one), imported on first use
    and then kept: an import statement in `judge_path` cost a lookup on every call."""
    if not _hardlink_finding:
        from acpd.policy.hardlinks import hardlink_finding

        _hardlink_finding.append(hardlink_finding)
    return _hardlink_finding[0]


def entry_real(lexical: str, raw: str, *, dest: bool = False) -> str:
    """The real path of what a command acting on the directory entry `lexical` touches:
    the entry itself (its parent resolved, its last component as written: `rm lnk` removes
    the link) unless the word ends in `/`, `.` or `..` (then what it points to); `dest`: a
    destination that is, or points to, a directory is written into (followed)."""
    base = lexical.rpartition("/")[2]
    if raw.endswith("/") or base in ("", ".", "..") or lexical == "/":
        return resolve(lexical)
    if dest and pathtext.isdir(lexical):
        return resolve(lexical)
    parent = lexical.rpartition("/")[0] or "/"
    real_parent = resolve(parent)
    return real_parent + base if real_parent.endswith("/") else f"{real_parent}/{base}"


def _first_hit(forms: tuple[str, ...], deny: tuple[PathPattern, ...], prefilter: Prefilter,
               rules: PathRules,
               literal: bool) -> str | None:
    """The pattern of `deny` one of `forms` matches (a glob word: one it may match)."""
    for form in forms:
        hit = matches(form, deny, rules.roots) if prefilter.may_match(form, rules.roots) else None
        if hit is None and _GLOB.search(form):
            hit = glob_may_match(form, deny, rules.roots, named_only=literal)
        if hit is not None:
            return hit
    return None


Judged = tuple[Verdict, str, str] | None


def physical(path: str) -> str:
    """The absolute `path` with its `..` components taken as the kernel takes them: after
    the links before them are resolved (`l/../x` with `l -> a/b` is `a/x`, where a textual
    normpath says `x`); the rest normalized as written (its last component not followed)."""
    parts = path.split("/")
    if ".." not in parts:
        return _normpath(path)
    last = len(parts) - 1 - parts[::-1].index("..")
    head = resolve("/".join(parts[: last + 1]) or "/")
    tail = "/".join(p for p in parts[last + 1 :] if p)
    return _normpath(f"{head.rstrip('/')}/{tail}") if tail else head


def has_parent_step(raw: str) -> bool:
    """Does the path as written hold a `..` component (see `physical`)?"""
    return ".." in raw and ".." in raw.split("/")


def judge_path(raw: str, mode: str, cwd: str, rules: PathRules, *, redirect: bool = False,
               cached: bool = False, literal: bool = False,
               entry: str | None = None) -> tuple[Verdict, str, str] | None:
    """None when fine; else (verdict, rule id, reason). The path is resolved on every call
    (`cached` is accepted and ignored: no file-system fact outlives a decision). Glob
    characters in `raw` are taken as a pattern that may name a denied path, unless `literal`
    (the shell expanded the word on disk and it matched nothing: it is passed as written).
    `entry`: "entry" when the command acts on the directory entry (a link itself), "made"
    when it makes the entry (a link or a rename's new name: a directory above a hooks
    directory made so swaps it), "dest" for a destination replaced as an entry unless it is
    a directory (see `entry_real`)."""
    if DYN in raw:
        return ("ask", "path.dynamic", f"{mode} path {raw.replace(DYN, '$?')!r} is not known "
                "before running")
    if not raw or raw == "-":
        return None
    if redirect and (raw in REDIRECT_DEVICES or _DEV_FD.fullmatch(raw)):
        return None
    joined = pathtext.join(cwd, raw)
    lexical = _normpath(joined)
    if lexical.startswith("//"):
        lexical = "/" + lexical.lstrip("/")
    if "\x00" in lexical:
        # `$'\0'` in a word: no file has that name, and realpath would raise
        return ("deny", "path.nul", f"{mode} path {raw!r} holds a NUL byte")
    if mode == "read":
        deny, prefilter = rules.deny_read, rules.read_filter
    else:
        deny, prefilter = rules.deny_write, rules.write_filter
    try:
        # `l/../x` goes where the kernel takes it: through the link, not to ./x
        place = physical(joined) if has_parent_step(raw) else lexical
        real = resolve(place) if entry is None else entry_real(place, raw,
                                                               dest=entry == "dest")
    except OSError as exc:  # EACCES on /proc/1/root, ELOOP...: a verdict, never an error
        hit = matches(lexical, deny, rules.roots)
        if hit is not None:
            return ("deny", f"path.deny-{mode}", f"{mode} of {raw} matches deny_{mode} {hit!r}")
        return ("ask", "path.unresolvable", f"{mode} of {raw}: its real path cannot be read "
                f"({exc.strerror or exc}), so it cannot be checked")
    forms = tuple(dict.fromkeys((lexical, place, real)))
    hit = _first_hit(forms, deny, prefilter, rules, literal)
    if hit is not None:
        return ("deny", f"path.deny-{mode}", f"{mode} of {raw} matches deny_{mode} {hit!r}")
    unreviewable: Judged = None
    if mode != "read" and rules.deny_read:
        # Writing over a file deny_read names: the card cannot show its content, so the
        # change (a secret replaced, `sort -o secrets/k.txt`) cannot be reviewed. Only an
        # ask: what the place itself says (a hooks directory, outside the roots) may be
        # stricter, and wins.
        hit = _first_hit(forms, rules.deny_read, rules.read_filter, rules, literal)
        if hit is not None:
            unreviewable = ("ask", "path.write-denied-read",
                            f"{mode} of {raw} changes a file deny_read names ({hit!r}): its "
                            "content cannot be shown")
    return _stricter(_place(raw, mode, lexical, real, rules, entry), unreviewable)


def _stricter(first: Judged, second: Judged) -> Judged:
    """The stricter of two verdicts (deny over ask over fine; the first on a tie)."""
    rank = {"deny": 2, "ask": 1}
    if second is None or (first is not None and rank.get(first[0], 0) >= rank.get(second[0], 0)):
        return first
    return second


def _place(raw: str, mode: str, lexical: str, real: str, rules: PathRules,
           entry: str | None) -> Judged:
    """What the path's place says: a hooks directory in the work tree, a git directory not
    named `.git`, a hard link to a denied file, outside the roots."""
    if mode != "read" and rules.roots:  # core.hooksPath in the work tree (hookdirs.py)
        from acpd.policy.hookdirs import hooks_write

        replaced = entry == "made" or (entry == "dest" and not pathtext.isdir(real))
        found_hook = hooks_write(lexical, real, raw, rules.roots, entry=replaced)
        if found_hook is not None:
            return found_hook
    if mode != "read":  # git directories by content, wherever they are (gitdirs.py)
        found_git = git_dir_write(lexical, real, raw)
        if found_git is not None:
            return found_git
    deny = rules.deny_read if mode == "read" else rules.deny_write
    if deny and entry is None:
        found = _hardlinks()(real, mode, rules)
        if found is not None:
            return (found[0], found[1], f"{mode} of {raw}: {found[2]}")
    return _outside(raw, mode, lexical, real, rules)


def _outside(raw: str, mode: str, lexical: str, real: str, rules: PathRules) -> Judged:
    if inside(lexical, rules.roots) and (real == lexical or inside(real, rules.roots)):
        return None
    extra = rules.read_roots if mode == "read" else rules.write_roots
    if matches(lexical, extra, rules.roots) and matches(real, extra, rules.roots):
        return None
    verdict = rules.outside_read if mode == "read" else rules.outside_write
    if verdict == "allow":
        return None
    return (verdict, f"path.outside-{mode}",
            f"{mode} of {raw} is outside the workspace ({real})")
