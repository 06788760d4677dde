"""What one decision knows while it walks a command line, and the helpers that turn a
simple command's words into argvs (`combos`: values, field splitting, brace and pathname
expansion, bounded) or a line into the texts to judge (`variants`)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable

from acpd.policy import budget as budget_mod
from acpd.policy import contexts, globs
from acpd.policy.checks import CheckContext
from acpd.policy.decision import Findings
from acpd.policy.globs import GlobState
from acpd.policy.rulematch import CompiledRule
from acpd.policy.rules import Trust
from acpd.policy.sandbox import PathRules, has_parent_step, normalized_roots, physical
from acpd.policy.text import nfkc_variant, strip_line_continuations
from acpd.policy.words import Env, expand

MAX_ARGV_COMBOS = 16


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
                "HEAD", os.path.basename(written)))
        probe = tree
        while kind != "file":
            if fnmatch.fnmatchcase(probe, written):
                return True
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            probe = parent
        return False
    if written.startswith(top):
        if not below or (kind != "entry" and os.path.isfile(written)
                         and not os.path.islink(written)):
            return False
        return not sandboxed or os.path.basename(written) == "HEAD"
    return kind != "file" and (written == tree or tree.startswith(written.rstrip("/") + "/"))


MAX_STALE_CHECKS = 20_000
"""Comparisons of the line's writes with what its checks relied on, at most (about 1 µs
each): past it the line asks (the check runs after the budget's)."""
_LINKING = frozenset({"entry", "data"})
"""Write kinds that may leave a link (or a directory from elsewhere) where they write."""


class Ctx:
    """What one decision knows while it walks a line (a plain slotted class: one is made
    per decision, on the hot path)."""

    __slots__ = ("cctx", "cwd", "cwds", "functions", "given_roots", "globs", "home", "line",
                 "matched_only", "mine", "only_rule", "out", "path_rules", "relied", "relied_trees",
                 "resolved_roots", "rules_for", "sandboxed", "scope", "trust", "writes",
                 "written")

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
        self.relied_trees: list[tuple[str, str, int, int, bool]] | None = None
        """(absolute path, what relied on it, the span of `writes` that are the relying
        command's own, whether what is below it counts): trees a check listed on disk, and
        directories a path goes up (`..`) from."""

    def wrote(self, raw: str, kind: str = "data") -> None:
        """The line writes the path `raw` (`kind`: "file" for a redirect, which can only make
        a file there; "entry" for a rename, deletion or link of the entry; else "data")."""
        self.wrote_name(raw)
        self.writes.append((raw, kind))  # type: ignore[union-attr]

    def wrote_name(self, raw: str) -> None:
        """The line writes a file of this name somewhere ("*": any name, anywhere)."""
        if self.written is None:
            self.written = set()
            self.writes = []
        self.written.add(raw.rstrip("/").rpartition("/")[2])

    def mark(self) -> int:
        """How many writes the line has made so far (`rely_tree`'s `since`)."""
        return len(self.writes) if self.writes is not None else 0

    def rely_tree(self, path: str, why: str, since: int, *, below: bool = True) -> None:
        """A check judged by what is at or below the absolute `path` now (a copy's source
        tree). Stale when another command of the line writes there, below it, or over one of
        its directories (`ln -s lib l && cp -r l/. gd`); the relying command's own writes
        (from `since`, its `mark()` before it wrote, to now) are not another's. `below`
        False: only what the entry itself is counts (a path that goes up from it, `l/..`)."""
        if self.relied_trees is None:
            self.relied_trees = []
        self.relied_trees.append((path, why, since, self.mark(), below))

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
        if self.relied_trees:
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
        assert self.relied_trees is not None and self.writes is not None
        trees = [t for t in self.relied_trees if t[4]]
        if trees and "*" in self.written:  # type: ignore[operator]
            return "*", trees[0][1]
        entries = list(dict.fromkeys(t for t in self.relied_trees if not t[4]))
        paths = len(self.writes) * max(1, len(self.cwds))
        if paths * (len(trees) + 1) + len(entries) * 32 > MAX_STALE_CHECKS:
            return "*", (f"{len(self.writes)} writes against {len(self.relied_trees)} places "
                         "the judge looked at: too many to check against each other")
        made: dict[str, list[int]] = {}
        """Paths written by what may make a link there (`_LINKING` kinds) -> which writes."""
        globbed: list[tuple[int, str]] = []
        for k, (raw, kind) in enumerate(self.writes):
            if "\x00" in raw:  # a value not known before running (DYN): path.dynamic's
                continue
            pattern = any(c in raw for c in "*?[")
            for cwd in self.cwds or [self.cwd]:
                joined = os.path.join(cwd, raw)
                # `l/../x` with l a link now is where the kernel takes it (sandbox.physical)
                written = physical(joined) if has_parent_step(raw) else os.path.normpath(joined)
                for tree, why, since, until, _ in trees:
                    if not since <= k < until and _over(written, tree, kind, pattern,
                                                        self.sandboxed, True):
                        return raw, why
                if entries and kind in _LINKING:
                    if pattern:
                        globbed.append((k, written))
                    else:
                        made.setdefault(written, []).append(k)
        if "*" in self.written:  # type: ignore[operator]
            # a checkout or an extraction can make a link where nothing is now (a tracked
            # symlink): a write through a directory that is not there yet
            for path, why, *_ in entries:
                if not os.path.lexists(path):
                    return "*", why
        if len(entries) * len(globbed) > MAX_STALE_CHECKS // 32:
            return "*", "too many writes by pattern to check against the directories above"
        for path, why, since, until, _ in entries:  # a directory above each, made a link?
            probe = path
            while True:
                for k in made.get(probe, ()):
                    if not since <= k < until:
                        return self.writes[k][0], why
                for k, written in globbed:
                    if not since <= k < until and fnmatch.fnmatchcase(probe, written):
                        return self.writes[k][0], why
                parent = os.path.dirname(probe)
                if parent == probe:
                    break
                probe = parent
        return None

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
            found = globs.expand(f, ctx.cwds, state) if globs.has_glob(f) else [(f,)]
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
