"""What one decision knows while it walks a command line, and the helpers that turn a
simple command's words into argvs (`combos`: values, field splitting, brace and pathname
expansion, bounded) or a line into the texts to judge (`variants`)."""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterable
from typing import Final

from acpd.policy import budget as budget_mod
from acpd.policy import contexts, globs, pathtext
from acpd.policy.checks import CheckContext
from acpd.policy.decision import Findings
from acpd.policy.globs import GlobState
from acpd.policy.rulematch import CompiledRule
from acpd.policy.rules import Trust
from acpd.policy.sandbox import (
    PathRules,
    has_parent_step,
    normalized_roots,
    physical,
    resolve,
)
from acpd.policy.text import nfkc_variant, strip_line_continuations
from acpd.policy.words import Env, expand

MAX_ARGV_COMBOS: Final = 16


def _over(written: str, tree: str, kind: str, pattern: bool, sandboxed: bool,
          below: bool) -> bool:
    """Does a write of `written` (`kind`: "file", a redirect or a program that only makes
    regular files; "dir", mkdir, which only makes empty directories; "tree", a copy or
    move of what is no link now; "entry", a rename, deletion or link of the entry; "data",
    any other) change what is at or below `tree`?
    Never for "dir" (what later fills it is written below the tree, and judged so). The
    tree itself or a directory above it: yes, unless only a file can be made there (the
    copy of a file lands as a file, judged by its landed name). Below it
    (when `below`): yes, unless it only changes the content of a file the listing saw (a
    regular file now, not replaced as an entry); under the sandbox, which keeps git's code
    read-only, only a new `HEAD` counts (it makes its directory a git directory)."""
    if kind == "dir":
        return False
    top = tree.rstrip("/") + "/"
    if pattern:  # a glob: below the tree by its literal start, or naming it or one above
        literal = written[:min(written.find(c) % (len(written) + 1) for c in "*?[")]
        if literal.startswith(top):
            return below and (not sandboxed or fnmatch.fnmatchcase(
                "HEAD", pathtext.basename(written)))
        probe = tree
        while kind != "file":
            if fnmatch.fnmatchcase(probe, written):
                return True
            parent = pathtext.dirname(probe)
            if parent == probe:
                break
            probe = parent
        return False
    if written.startswith(top):
        if not below or (kind != "entry" and pathtext.isfile(written)
                         and not pathtext.islink(written)):
            return False
        return not sandboxed or pathtext.basename(written) == "HEAD"
    return kind != "file" and (written == tree or tree.startswith(written.rstrip("/") + "/"))


Rely = tuple[str, str, int, int, bool, int, bool]
"""(absolute path, what relied on it, the span of `writes` that are the relying command's
own, whether what is below it counts, the relying simple command, whether it is the very
place a path is read or written at)."""


def _merged(entries: list[Rely]) -> list[Rely]:
    """One rely per place and relying command (the widest span of its own writes): a tree's
    landed files each rely on the same directories."""
    widest: dict[tuple[str, int, int, bool], Rely] = {}
    for entry in entries:
        key = (entry[0], entry[2], entry[5], entry[6])
        known = widest.get(key)
        if known is None or entry[3] > known[3]:
            widest[key] = entry
    return list(widest.values())


MAX_LINKS: Final = 40
"""Links followed resolving one path (the kernel's limit)."""


def _steps(path: str) -> tuple[list[str], str]:
    """The links the kernel meets resolving the absolute `path` now, each as the entry it
    is (its directory resolved: `q -> s -> t` meets ws/q and ws/s), and where it ends
    (realpath's answer: a missing component and what follows kept as written)."""
    links: list[str] = []
    todo = [p for p in reversed(path.split("/")) if p]
    cur = "/"
    while todo:
        part = todo.pop()
        if part == ".":
            continue
        if part == "..":
            cur = pathtext.dirname(cur)
            continue
        nxt = pathtext.join(cur, part)
        try:
            found = os.lstat(nxt)
        except (OSError, ValueError):
            return links, pathtext.normpath("/".join((nxt, *reversed(todo))))
        if not stat.S_ISLNK(found.st_mode):
            cur = nxt
            continue
        links.append(nxt)
        if len(links) > MAX_LINKS:  # ELOOP: the command fails there
            return links, pathtext.normpath("/".join((nxt, *reversed(todo))))
        target = os.readlink(nxt)
        if target.startswith("/"):
            cur = "/"
        todo.extend(p for p in reversed(target.split("/")) if p)
    return links, cur


def _real(path: str) -> tuple[str, ...]:
    """The other spellings of the absolute `path` now: every link its resolution meets and
    where it ends (a line that replaces any of them changes what `path` is)."""
    links, real = _steps(path)
    return tuple(dict.fromkeys(p for p in (*links, real) if p != path))


def _spellings(written: str) -> tuple[str, ...]:
    """A written path as written and through the links above it now (`a/x` with `a -> b`
    is also `b/x`): the entry itself is not followed (a link made there stays an entry)."""
    head, _, name = written.rpartition("/")
    real = resolve(head or "/")
    other = f"{real.rstrip('/')}/{name}"
    return (written, other) if other != written else (written,)


def _probes(path: str) -> dict[str, None]:
    """`path` and its directories, as written and through every link met resolving it now
    (each link's entry and where it ends)."""
    out: dict[str, None] = {}
    for start in (path, *_real(path)):
        probe = start
        while probe not in out:
            out[probe] = None
            parent = pathtext.dirname(probe)
            if parent == probe:
                break
            probe = parent
    return out


def may_name(pattern: str, path: str) -> bool:
    """May the glob `pattern` (absolute, as written) name the absolute `path`, or a
    directory above a path it names, when bash expands it? A superset: each component is
    matched as the expander matches it (globs.py: its bracket expressions, classes included)
    with case and leading dots not looked at, and past `**` or a `..` anything below the
    literal start. The literal start is taken as written and through the links in it now."""
    parts = [p for p in pattern.split("/") if p and p != "."]
    first = next((i for i, p in enumerate(parts) if globs.has_glob(p)), None)
    if first is None:
        return False
    literal = "/" + "/".join(parts[:first])
    names = [p for p in path.split("/") if p]
    for head in dict.fromkeys((pathtext.normpath(literal), resolve(literal))):
        start = [p for p in head.split("/") if p]
        if len(names) > len(start) and names[:len(start)] == start and _names_match(
                parts[first:], names[len(start):]):
            return True
    return False


def _names_match(parts: list[str], names: list[str]) -> bool:
    for part, name in zip(parts, names, strict=False):  # a shorter path: a directory above
        if part == ".." or "**" in part:
            return True
        if not globs.component_may_match(part, name):
            return False
    return True


REPEATS: Final = re.compile(r"\b(?:for|while|until|select|function|xargs|parallel|find|watch)\b"
                             r"|\(\s*\)")
"""What may run a simple command of the line more than once (a superset: a word in a
quoted string counts too)."""


def may_repeat(text: str) -> bool:
    """`REPEATS.search(text)`, without the search (a regex tried at every position) when no
    text it can match is there at all: the common case. (Each word of REPEATS written out: a
    generator over a tuple of them cost twice the tests themselves, compiled.)"""
    return ("for" in text or "while" in text or "until" in text or "select" in text
            or "function" in text or "xargs" in text or "parallel" in text or "find" in text
            or "watch" in text or "(" in text) and REPEATS.search(text) is not None

MAX_STALE_CHECKS: Final = 20_000
"""Comparisons of the line's writes with what its checks relied on, at most (about 1 µs
each): past it the line asks (the check runs after the budget's)."""
_LINKING: Final = frozenset({"entry", "data", "link"})
"""Write kinds that may leave a link (or a directory from elsewhere) where they write."""


class GlobRely:
    """A glob word expanded on disk as it is now: stale when another command of the line
    makes an entry the pattern may name (bash expands it when the command runs)."""

    __slots__ = ("command", "moved", "pattern", "why")

    def __init__(self, pattern: str, why: str, command: int) -> None:
        self.command = command
        """The simple command that expands it (`Ctx.command`): its own writes do not count."""
        self.pattern = pattern
        """Absolute, as written (its `..` kept: `l?/..` goes up from what `l?` names)."""
        self.why = why
        self.moved = False
        """The command copies, moves or links what the word names: a new plain file among
        the names lands under its name too (`echo x > e/pre-commit && mv e/* scripts/`)."""

    def counts(self, kind: str) -> bool:
        """Can a write of `kind` add a name this glob expands to, that the judge did not
        see? A deletion or an empty directory never; a plain file or what is no link (a
        copied tree) only where the names are carried somewhere else."""
        return kind not in ("dir", "gone") and (self.moved or kind not in ("file", "tree"))


class Ctx:
    """What one decision knows while it walks a line (a plain slotted class: one is made
    per decision, on the hot path)."""

    __slots__ = ("anywhere", "cctx", "command", "commands", "cwd", "cwds", "functions",
                 "given_roots", "globs", "home", "line", "matched_only", "mine",
                 "only_rule", "out", "path_rules", "relied", "relied_globs", "relied_trees",
                 "repeats", "resolved_roots", "rules_for", "sandboxed", "scope", "trust",
                 "write_commands", "writes", "written")

    def __init__(self, cwd: str, given_roots: tuple[str, ...], home: str, trust: Trust,
                 rules_for: Callable[[tuple[str, ...], str], PathRules], out: Findings, *,
                 only_rule: CompiledRule | None = None, sandboxed: bool = False,
                 line: str = "") -> None:
        self.cwd = cwd
        self.given_roots = given_roots
        """The workspace roots as the caller gave them; `roots` resolves them (once, when a
        check first needs them: a line that names no path never pays for it)."""
        self.home = home
        self.trust = trust
        self.rules_for = rules_for
        self.out = out
        self.functions: set[str] = set()
        self.cwds: list[str] = []
        self.only_rule = only_rule
        self.matched_only = False
        self.cctx: CheckContext | None = None
        self.sandboxed = sandboxed
        self.scope = contexts.Scope()
        self.line = line
        """The whole command line (the glob options it may set)."""
        self.repeats = may_repeat(line)
        """The line may run one simple command more than once (a loop, a function, xargs):
        then no write is a command's own (its first run's write changes its second). Each
        text judged (a payload after quote removal: `bash -c 'f'or' ...'`) is looked at too
        (engine `_source`)."""
        self.globs: GlobState | None = None
        """This decision's pathname expansion, made on the first glob word."""
        self.resolved_roots: tuple[str, ...] | None = None
        self.path_rules: PathRules | None = None
        self.written: set[str] | None = None
        """The names (last components) of the paths the line writes."""
        self.relied: dict[str, str] | None = None
        """Names of files a check read on disk before the line ran -> what relied on them."""
        self.mine: int | None = None
        """While a simple command is judged: its first write's index (`mark()` before it)."""
        self.writes: list[tuple[str, str]] | None = None
        """The paths the line writes as written, and how (`_over`'s kinds)."""
        self.command = 0
        """The simple command being judged (a serial number: `enter_command`)."""
        self.commands = 0
        self.anywhere: list[int] = []
        """The simple commands that write names the judge does not see (`wrote_anything`)."""
        self.relied_trees: list[Rely] | None = None
        """Trees a check listed on disk, and places a path's judgement took as they are now:
        directories a path goes up (`..`) from or is written in, the place itself (`Rely`)."""
        self.write_commands: list[int] = []
        """The simple command of each of `writes` (`Ctx.command`): a command's own."""
        self.relied_globs: list[GlobRely] | None = None
        """Glob words the judge expanded on disk as it is now (`glob_alternatives`)."""

    def wrote(self, raw: str, kind: str = "data") -> None:
        """The line writes the path `raw` (`kind`: as `_over` says; "gone" for a deletion,
        which makes nothing there)."""
        self.wrote_name(raw)
        self.writes.append((raw, kind))  # type: ignore[union-attr]
        self.write_commands.append(self.command)

    def wrote_name(self, raw: str) -> None:
        """The line writes a file of this name somewhere ("*": any name, anywhere)."""
        if self.written is None:
            self.written = set()
            self.writes = []
        self.written.add(raw.rstrip("/").rpartition("/")[2])

    def wrote_anything(self) -> None:
        """The command writes names the judge does not see (a checkout, an extraction): any
        name, anywhere, and possibly a tracked link where a file or a directory is now."""
        self.wrote_name("*")
        self.anywhere.append(self.command)

    def enter_command(self) -> int:
        """A simple command's judging starts; returns the outer one's serial (a payload's
        commands are commands of their own) for `leave_command`."""
        outer = self.command
        self.commands += 1
        self.command = self.commands
        return outer

    def leave_command(self, outer: int) -> None:
        self.command = outer

    def rely_glob(self, pattern: str, why: str) -> None:
        """A glob word was expanded on disk as it is now (`pattern`: absolute, as written)."""
        if self.relied_globs is None:
            self.relied_globs = []
        self.relied_globs.append(GlobRely(pattern, why, self.command))

    def globs_moved(self) -> None:
        """The command being judged copies, moves or links its operands (`GlobRely.moved`)."""
        for rely in self.relied_globs or ():
            if rely.command == self.command:
                rely.moved = True

    def mark(self) -> int:
        """How many writes the line has made so far (`rely_tree`'s `since`)."""
        return len(self.writes) if self.writes is not None else 0

    def rely_tree(self, path: str, why: str, since: int, *, below: bool = True,
                  leaf: bool = False) -> None:
        """A check judged by what is at or below the absolute `path` now (a copy's source
        tree). Stale when another command of the line writes there, below it, or over one of
        its directories (`ln -s lib l && cp -r l/. gd`); the relying command's own writes
        (from `since`, its `mark()` before it wrote, to now) are not another's. `below`
        False: only what the entry itself is counts (a path that goes up from it, `l/..`)."""
        if self.relied_trees is None:
            self.relied_trees = []
        self.relied_trees.append((path, why, since, self.mark(), below, self.command, leaf))

    def rely(self, names: Iterable[str], why: str) -> None:
        """A check judged by these files as they are now (`.gitignore`, `rust-toolchain`)."""
        if self.relied is None:
            self.relied = {}
        for name in names:
            self.relied.setdefault(name.rpartition("/")[2], why)

    def rewritten(self) -> tuple[str, str] | None:
        """(a name the line writes, what relied on it) when a check of this line read a
        file the line itself may write: in any order, since a later loop round, a pipeline
        or a background job can run the writer first."""
        if not self.written:
            return None
        if self.relied_trees or self.relied_globs:
            stale = self._stale_tree()
            if stale is not None:
                return stale
        if not self.relied:
            return None
        for name in self.written:
            pattern = any(c in name for c in "*?[")
            for relied, why in self.relied.items():
                if name == relied or (pattern and fnmatch.fnmatchcase(relied, name)):
                    return name, why
        return None

    def _stale_tree(self) -> tuple[str, str] | None:
        assert self.writes is not None
        relied = self.relied_trees or []
        trees = [t for t in relied if t[4]]
        entries = _merged([t for t in relied if not t[4]])
        patterns = self.relied_globs or []
        cwds = self.cwds or [self.cwd]
        paths = len(self.writes) * len(cwds) * 2
        if paths * (len(trees) * 2 + len(patterns) + 1) > MAX_STALE_CHECKS:
            return "*", (f"{len(self.writes)} writes against {len(relied) + len(patterns)} "
                         "places the judge looked at: too many to check against each other")
        # A checkout or an extraction writes names the line does not show, and may put a
        # tracked link where a file or a directory is now: what another command relied on
        # there is stale, present or not (a directory written through: never the workspace's
        # top or what is above it; a written file: at the top too). Under the sandbox only a
        # copied tree is (reads of denied files and writes to git's code fail there; a new
        # HEAD in a copied tree does not).
        for path, why, _, _, below, command, _ in relied:
            if any(c != command or self.repeats for c in self.anywhere) and (below or (
                    not self.sandboxed and not self._above_root(path))):
                return "*", why
        if not self.sandboxed:
            for glob in patterns:
                if any(c != glob.command or self.repeats for c in self.anywhere):
                    return "*", glob.why
        tree_forms = [((tree, *_real(tree)), why, since, until) for tree, why, since, until, *_
                      in trees]
        made: dict[str, list[int]] = {}
        """Paths written by what may make a link there (`_LINKING` kinds) -> which writes."""
        globbed: list[tuple[int, str]] = []
        for k, (raw, kind) in enumerate(self.writes):
            if "\x00" in raw:  # DYN: a value not known before running
                continue
            pattern = any(c in raw for c in "*?[")
            for cwd in cwds:
                joined = pathtext.join(cwd, raw)
                # `l/../x` with l a link now is where the kernel takes it (sandbox.physical)
                written = physical(joined) if has_parent_step(raw) else pathtext.normpath(joined)
                # and `a/x` with a -> b is b/x: both spellings are compared
                for form in (written,) if pattern else _spellings(written):
                    for names, why, since, until in tree_forms:
                        if not self._own(k, None, since, until) and any(
                                _over(form, tree, kind, pattern, self.sandboxed, True)
                                for tree in names):
                            return raw, why
                    for glob in patterns:
                        if glob.counts(kind) and not self._own(k, glob.command) and \
                                may_name(glob.pattern, form):
                            return raw, glob.why
                    if entries and kind in _LINKING:
                        if pattern:
                            globbed.append((k, form))
                        else:
                            made.setdefault(form, []).append(k)
        patterned = sum(any(c in e[0] for c in "*?[") for e in entries)
        if (made or globbed) and len(entries) * (64 + len(globbed)) + patterned * len(
                made) > MAX_STALE_CHECKS:
            return "*", "too many writes to check against the directories above"
        for path, why, since, until, _, command, leaf in entries if made or globbed else ():
            for probe in _probes(path):  # the place or a directory above, made a link?
                for k in made.get(probe, ()):
                    if self._own(k, command, since, until):
                        continue  # the relying command's own
                    if leaf and probe == path and self.writes[k][1] == "link":
                        continue  # ln's own link: where it points was judged (read, write)
                    return self.writes[k][0], why
                for k, written in globbed:
                    if not self._own(k, command, since, until) and \
                            fnmatch.fnmatchcase(probe, written):
                        return self.writes[k][0], why
                if any(c in probe for c in "*?["):  # a glob that matched nothing: a pattern
                    for form, ks in made.items():
                        if may_name(probe, form) and any(
                                not self._own(k, command, since, until) for k in ks):
                            return self.writes[ks[0]][0], why
        return None

    def _own(self, k: int, command: int | None, since: int = 0, until: int = 0) -> bool:
        """Is the line's write `k` the relying command's own (by the same simple command, or
        in the span of writes it made)? Never when the line may run a command twice."""
        if self.repeats:
            return False
        return since <= k < until or (command is not None and
                                      self.write_commands[k] == command)

    def _above_root(self, path: str) -> bool:
        """Is `path` a workspace root or a directory above one (never replaced by what a
        checkout in the workspace writes)?"""
        return any(root == path or root.startswith(path.rstrip("/") + "/")
                   for root in self.roots)

    @property
    def roots(self) -> tuple[str, ...]:
        if self.resolved_roots is None:
            self.resolved_roots = normalized_roots(self.given_roots)
        return self.resolved_roots

    @property
    def paths(self) -> PathRules:
        if self.path_rules is None:
            self.path_rules = self.rules_for(self.roots, self.home)
        return self.path_rules

    def glob_state(self) -> GlobState:
        if self.globs is None:
            self.globs = GlobState.for_line(self.line)
        return self.globs




def input_in_payload(argv: list[str], chain: list[str]) -> bool:
    """`xargs -I{} sh -c 'echo {}'`, `parallel sh -c 'echo {}'`: each input line is pasted
    into the script before the shell reads it (a line `; rm x` runs `rm x`)."""
    if "parallel" in chain:
        return True
    if "xargs" not in chain:
        return False
    return any(a.startswith(("-I", "-i", "--replace", "--rep")) or (
        a.startswith("-") and not a.startswith("--") and ("I" in a or "i" in a))
        for a in argv if a.startswith("-"))


def variants(command: str) -> list[str]:
    """The texts to judge: without backslash-newlines (as bash reads it), as written, and
    their NFKC forms when the text is not ASCII."""
    stripped = strip_line_continuations(command)
    variants = [stripped] if stripped == command else [stripped, command]
    if not command.isascii():  # an ASCII text (and what is stripped of it) is NFKC
        for v in list(variants):
            norm = nfkc_variant(v)
            if norm is not None and norm not in variants:
                variants.append(norm)
    return variants


def combos(words: list[str], env: Env, ctx: Ctx) -> list[list[str]]:
    """The argvs a command's words can make (at most MAX_ARGV_COMBOS, in linear time). Once
    the bound is reached, alternatives of later words are spread over the kept argvs round
    robin, so that each alternative is judged in some argv. Glob words after the command
    name are replaced by what they match on disk now (`globs`)."""
    result: list[list[str]] = [[]]
    for k, word in enumerate(words):
        if not k & 255:
            budget_mod.check()
        exp = expand(word, env, ctx.home)
        alternatives = exp.alternatives
        if exp.glob and k > 0:
            alternatives = glob_alternatives(alternatives, ctx)
        if len(alternatives) == 1:
            for argv in result:
                argv.extend(alternatives[0])
        elif len(result) * len(alternatives) <= MAX_ARGV_COMBOS:
            result = [[*argv, *alt] for argv in result for alt in alternatives]
        else:
            while len(result) < min(MAX_ARGV_COMBOS, len(alternatives)):
                result.append(list(result[len(result) % len(result)]))
            for i, argv in enumerate(result):
                argv.extend(alternatives[i % len(alternatives)])
    return result


def glob_alternatives(alternatives: tuple[tuple[str, ...], ...],
                      ctx: Ctx) -> tuple[tuple[str, ...], ...]:
    """Each field with glob characters replaced by its matches (in each sort order); a
    field that cannot be expanded within the bounds stays as written, and the line asks."""
    out: list[tuple[str, ...]] = []
    state = ctx.glob_state()
    for alt in alternatives:
        orders: list[list[str]] = [[], []]
        for f in alt:
            if not globs.has_glob(f):
                orders[0].append(f)
                orders[1].append(f)
                continue
            for cwd in ctx.cwds:  # bash expands it when the command runs: a name the line
                ctx.rely_glob(f if f.startswith("/") else f"{cwd}/{f}",  # makes there counts
                              f"the glob {f!r} was expanded on the disk as it is now")
            found = globs.expand(f, ctx.cwds, state)
            if found is None:
                ctx.out.add("ask", "path.glob-too-wide",
                            f"the glob {f!r} matches more than {globs.MAX_MATCHES} paths, reads "
                            "too large a directory, or uses extglob forms")
                found = [(f,)]
            orders[0].extend(found[0])
            orders[1].extend(found[-1])
        out.append(tuple(orders[0]))
        if orders[1] != orders[0]:
            out.append(tuple(orders[1]))
    return tuple(dict.fromkeys(out))


def recursive(functions: dict[str, set[str]]) -> bool:
    for start in functions:
        budget_mod.check()
        stack, seen = [start], set()
        while stack:
            cur = stack.pop()
            for callee in functions.get(cur, ()):
                if callee == start:
                    return True
                if callee in functions and callee not in seen:
                    seen.add(callee)
                    stack.append(callee)
    return False
