"""git: reads of `deny_read` files through the object store, the index and the stash.

The kernel sandbox masks a denied file on disk; it cannot mask git's copy of it. `git log -p`,
`git show HEAD`, `git diff --cached`, `git grep K HEAD`, `git stash show -p`, `git cat-file -p
X`, `git tag --format=%(raw)` print it from the object store; `git diff` and `git grep` print
the tracked copy from the index (or the work tree, unless sandboxed). So, whenever the policy
has a `deny_read` list and whatever the sandbox, each git form asks unless it is shown not to
print a denied file:

- history (any revision, the stash, reflogs, notes, tags, blobs by id): asks, unless its
  pathspecs confine it to paths no deny pattern can name. A pathspec `P` covers `P` and
  everything beneath it in every revision (a file today may be a directory in history), so
  with a pattern like `**/.env` no pathspec confines it: history forms with content ask.
- the index (and the tracked work tree): asks when the index (read now, bounded:
  `git_index`) holds a path the deny list names that the pathspecs reach.
- `REV:path` and `:path` name one path exactly: judged by the path policy (`reads`);
  as a tree (`git grep K HEAD:src`, `git diff A:src B:src`) they count as a pathspec.
- output formats that carry no file content (`--stat`, `--name-only`, `-s`...) print nothing
  of a file; `git show` of a name that may be a blob or a tag of one prints it anyway, so only
  revisions that are commits by their syntax (`HEAD`, `X~2`, `X^`, `A..B`) count as safe there.
- a subcommand, alias or option this module does not know asks (an alias may be `log -p`),
  and so does one the argument spec does not model (the sandbox would otherwise allow it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from acpd.policy import pathtext
from acpd.policy.decision import Verdict
from acpd.policy.programs.git import GLOBAL, STASH_SUB, SUB
from acpd.policy.programs.git_index import (
    MAGIC,
    Repository,
    Unreadable,
    denied_tracked,
    find_repository,
    may_reach,
)
from acpd.policy.programs.git_words import (
    GLOB,
    LOG_LIKE,
    NO_CONTENT,
    PATCH,
    QUIET_SUBS,
    STAGE_PREFIX,
    commit_by_syntax,
    dashdash_index,
    object_colon,
    object_path,
    short_value,
    spec_covers,
)
from acpd.policy.programs.spec import Model, Parsed, Program, parse_argv
from acpd.policy.sandbox import PathRules
from acpd.policy.words import DYN

Finding = tuple[Verdict, str, str]

_INTERACTIVE: Final = {"add": ("--patch", "--interactive", "--edit"),
                       "commit": ("--patch", "--interactive", "--verbose"),
                       "status": ("--verbose",),
                       "checkout": ("--patch",), "restore": ("--patch",), "reset": ("--patch",)}
_INTERACTIVE_SHORT: Final = {"add": "pie", "commit": "pv", "status": "v", "checkout": "p",
                             "restore": "p", "reset": "p"}
class GitContent:
    """What judging a git argv found: findings, and exact paths read from the object store
    or the index (for the path policy, as reads). (A plain slotted class, made per git
    command: mypyc leaves a dataclass's generated `__init__` interpreted.)"""

    __slots__ = ("findings", "reads")

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.reads: list[str] = []


@dataclass(frozen=True, slots=True)
class _Form:
    """The lexical facts of one git argv (pure: memoised)."""

    sub: str | None
    sub_args: tuple[str, ...]
    """The words after the subcommand (after `stash SUB` / `reflog show` for those)."""
    stash_sub: str
    """`git stash`'s own subcommand (push when none is given)."""
    dirs: tuple[str, ...]
    """`-C` directories, in order."""
    parsed: Parsed | None
    """The subcommand's options and positionals, when its table is known."""
    unknown: bool
    """The argument spec did not model some option or argument."""
    after_separator: int | None = None
    """Words after the `--` that ends the options (None: no such `--`; one that is an
    option's value, as in `git grep -e -- HEAD`, is not it)."""


@lru_cache(maxsize=1024)
def _form(args: tuple[str, ...]) -> _Form:
    glob = parse_argv(GLOBAL, list(args), Model("git"))
    pos = glob.positionals
    if not pos:
        return _Form(None, (), "", (), None, False)
    sub, rest = pos[0], pos[1:]
    model = Model("git")
    prog = SUB.get(sub)
    stash_sub = ""
    if sub == "stash":
        stash_sub = rest[0] if rest and not rest[0].startswith("-") else "push"
        rest = rest[1:] if rest and not rest[0].startswith("-") else rest
        prog = STASH_SUB.get(stash_sub)
        if prog is None:
            model.ask_unknown(f"stash {stash_sub}")
    elif sub == "reflog":
        prog = SUB["log"]
        rest = rest[1:] if rest[:1] in (("show",), ("list",), ("exists",)) else rest
    parsed = parse_argv(prog, list(rest), model) if prog is not None else None
    return _Form(sub, tuple(rest), stash_sub, tuple(glob.values("-C")), parsed,
                 bool(model.unknown), _separator(prog, rest))


def _separator(prog: Program | None, rest: tuple[str, ...]) -> int | None:
    for k, word in enumerate(rest):
        if word != "--":
            continue
        probe = Model("git")
        if prog is not None:
            parse_argv(prog, list(rest[:k]), probe)
        if not any("lacks its value" in u for u in probe.unknown):
            return len(rest) - k - 1
    return None


def git_content(args: list[str], cwds: list[str], rules: PathRules) -> GitContent:
    """Judge `git ARGS` run in each of `cwds` for reads of deny_read files through git."""
    out = GitContent()
    form = _form(tuple(args))
    if form.sub is None or DYN in form.sub:
        return out
    for cwd in cwds:
        where = cwd
        for d in form.dirs:
            where = pathtext.normpath(pathtext.join(where, d))
        if DYN in where:
            continue
        _judge(form, where, rules, out)
    return out


def _judge(form: _Form, where: str, rules: PathRules, out: GitContent) -> None:
    sub = form.sub
    assert sub is not None
    judge = _Judge(form, where, rules, out)
    if not rules.deny_read:
        judge.object_paths()
        return
    if form.unknown and (sub in SUB or sub in ("stash", "reflog")):
        judge.ask("git.content-unmodeled", f"git {sub}: an option or argument the spec does "
                  "not model may print files that deny_read names from git's object store "
                  "(the sandbox cannot mask it)")
        return
    if sub in ("show",):
        judge.show()
    elif sub == "diff":
        judge.diff()
    elif sub == "grep":
        judge.grep()
    elif sub in LOG_LIKE:
        judge.log()
    elif sub == "stash":
        judge.stash()
    elif sub == "cat-file":
        judge.cat_file()
    elif sub == "annotate":
        judge.out.reads.extend(pathtext.join(where, p) for p in _plain_positionals(form))
    elif sub in QUIET_SUBS:
        judge.quiet()
    else:
        judge.ask("git.content-unknown", f"git {sub} is not known to keep files that "
                  "deny_read names out of its output (it may read git's object store, or be "
                  "an alias of a form that does)")


def _plain_positionals(form: _Form) -> list[str]:
    return [a for a in form.sub_args if not a.startswith("-")]


class _Judge:
    def __init__(self, form: _Form, where: str, rules: PathRules, out: GitContent) -> None:
        self.form = form
        self.sub = form.sub or ""
        self.parsed = form.parsed
        self.where = where
        self.rules = rules
        self.out = out
        self._repo: Repository | None = None
        self._looked = False

    # -- facts -----------------------------------------------------------------------------

    def has(self, names: frozenset[str]) -> bool:
        return self.parsed is not None and any(o.name in names for o, _ in self.parsed.options)

    def repo(self) -> Repository | None:
        if not self._looked:
            self._looked = True
            try:
                self._repo = find_repository(self.where)
            except Unreadable as exc:
                self.ask("git.index-unreadable", f"git {self.sub}: {exc}; files that "
                         "deny_read names may be tracked")
        return self._repo

    def ask(self, rule: str, reason: str) -> None:
        self.out.findings.append(("ask", rule, reason))

    def operands(self, skip_pattern: bool = False) -> tuple[list[str], list[str], list[str]]:
        """(revisions, pathspecs, REV:path words) of the positionals."""
        assert self.parsed is not None
        pos = list(self.parsed.positionals)
        if skip_pattern and pos:
            pos = pos[1:]
        dashdash = dashdash_index(self.form.after_separator, pos)
        revs: list[str] = []
        specs: list[str] = []
        objects: list[str] = []
        for k, arg in enumerate(pos):
            kind = "path" if k >= dashdash else self.kind(arg)
            {"rev": revs, "path": specs, "object": objects}[kind].append(arg)
        return revs, specs, objects

    def kind(self, arg: str) -> str:
        """How git reads a word before `--`: a revision, a path, or REV:path / :path."""
        if arg.startswith((":(", ":!", ":^")):
            return "path"
        if arg.startswith(":/"):
            return "rev"  # a commit found by its message (or the top of the tree)
        if object_colon(arg) >= 0:
            return "object"
        if pathtext.lexists(pathtext.join(self.where, arg)) or GLOB.search(arg):
            return "path"
        return "rev"

    def object_paths(self, words: list[str] | None = None) -> list[str]:
        """The absolute paths named by REV:path / :path words, added to `reads`."""
        found: list[str] = []
        for word in words if words is not None else self._object_words():
            colon = object_colon(word)
            path = word[colon + 1 :]
            if STAGE_PREFIX.match(word):
                path = word[3:]
            if not path:
                continue
            found.extend(self._abs_paths(path))
        self.out.reads.extend(found)
        return found

    def _object_words(self) -> list[str]:
        return [a for a in self.form.sub_args if not a.startswith("-") and object_colon(a) >= 0]

    def _abs_paths(self, path: str) -> list[str]:
        """A path inside a tree: relative to the top of the work tree, or to where git runs
        when it starts with ./ or ../ (both forms are judged when the top is not known)."""
        if path.startswith(("./", "../")) or path in (".", ".."):
            return [pathtext.normpath(pathtext.join(self.where, path))]
        repo = self.repo()
        tops = [repo.top] if repo is not None else [self.where]
        return [pathtext.normpath(pathtext.join(top, path)) for top in tops]

    # -- sources ---------------------------------------------------------------------------

    def history(self, what: str, specs: list[str]) -> None:
        """`what` prints contents of files from history, limited by `specs` (absolute)."""
        hit = self._history_hit(specs)
        if hit is not None:
            self.ask("git.history-read", f"git {what} prints file contents from the "
                     f"repository's history, where files that deny_read names ({hit!r}) may "
                     "be; the sandbox cannot mask git's object store")

    def _history_hit(self, specs: list[str]) -> str | None:
        if not specs:  # the whole tree, in every revision
            repo = self.repo()
            specs = [repo.top if repo is not None else MAGIC]
        for spec in specs:
            for pat in self.rules.deny_read:
                if may_reach(spec, pat, self.rules.roots):
                    return pat.text
        return None

    def index(self, what: str, specs: list[str]) -> None:
        """`what` prints tracked contents (from the index or the work tree) under `specs`."""
        repo = self.repo()
        if repo is None:
            return
        try:
            denied = denied_tracked(repo, self.rules)
        except Unreadable as exc:
            self.ask("git.index-unreadable", f"git {what}: {exc}; files that deny_read "
                     "names may be tracked")
            return
        for path, pattern, sparse in denied:
            if not specs or any(spec_covers(s, path, sparse) for s in specs):
                shown = os.path.relpath(path, self.where)
                self.ask("git.index-read", f"git {what} prints the tracked {shown} (deny_read "
                         f"{pattern!r}) from git's index; the sandbox cannot mask it")
                return

    def specs_abs(self, specs: list[str]) -> list[str]:
        out: list[str] = []
        for s in specs:
            if s.startswith(":") or GLOB.search(s):
                out.append(MAGIC)
            else:
                out.append(pathtext.normpath(pathtext.join(self.where, s)))
        return out

    # -- subcommands -----------------------------------------------------------------------

    def log(self) -> None:
        _revs, specs, objects = self.operands()
        self.object_paths(objects)
        if self.has(PATCH):
            self.history(f"{self.sub} with a patch option", self.specs_abs(specs))

    def show(self) -> None:
        revs, specs, objects = self.operands()
        self.object_paths(objects)
        quiet = self.has(NO_CONTENT) and not self.has(PATCH)
        if objects and not revs and not specs:
            return  # only REV:path words: each judged as a read of that path
        unsure = [r for r in revs if not commit_by_syntax(r)]
        if quiet and not unsure:
            return
        what = f"show {unsure[0]}" if unsure else "show"
        if unsure:
            self.ask("git.history-read", f"git {what} prints the object it names, which may "
                     "be a file (a blob, or a tag of one) that deny_read names; the sandbox "
                     "cannot mask git's object store")
            return
        self.history(what, self.specs_abs(specs))

    def diff(self) -> None:
        assert self.parsed is not None
        if self.parsed.has("--no-index"):
            return  # work-tree files: judged as reads and trees by the argument spec
        revs, specs, objects = self.operands()
        self.object_paths(objects)
        if self.has(NO_CONTENT) and not self.has(PATCH):
            return
        trees = [p for w in objects for p in self._abs_paths(object_path(w)) if p]
        history = revs or objects or self.parsed.has("--cached", "--staged", "--merge-base")
        if history:
            self.history("diff with a revision or --cached", self.specs_abs(specs) + trees)
        self.index("diff", self.specs_abs(specs))

    def grep(self) -> None:
        assert self.parsed is not None
        if self.parsed.has("--no-index"):
            return
        revs, specs, objects = self.operands(skip_pattern=not self.parsed.role("pattern"))
        self.object_paths(objects)
        if self.parsed.has("--recurse-submodules"):
            self.ask("git.history-read", "git grep --recurse-submodules reads every "
                     "submodule's index and objects, where files that deny_read names may be")
            return
        trees = [p for w in objects for p in self._abs_paths(object_path(w)) if p]
        if revs or objects:
            self.history("grep in a revision", self.specs_abs(specs) + trees)
        self.index("grep", self.specs_abs(specs))

    def stash(self) -> None:
        sub = self.form.stash_sub
        if sub == "show":
            if not (self.has(NO_CONTENT) and not self.has(PATCH)):
                self.history("stash show (a patch unless --stat or the like is given: "
                             "stash.showPatch)", [])
        elif sub == "list":
            if self.has(PATCH):
                self.history("stash list with a patch option", [])
        elif sub in ("push", "save") and self.has(frozenset({"-p", "--patch"})):
            self.ask("git.index-read", "git stash --patch prints the changes of tracked "
                     "files, which may include files that deny_read names")

    def cat_file(self) -> None:
        args = [a for a in self.form.sub_args]
        opts = [a for a in args if a.startswith("-")]
        words = [a for a in args if not a.startswith("-")]
        if opts and all(o in ("-t", "-s", "-e") for o in opts):
            return  # type, size, existence: no content
        objects = [w for w in words if w not in ("blob", "tree", "commit", "tag")]
        if objects and all(object_colon(w) >= 0 for w in objects) and not any(
                o.startswith("--batch") or o in ("--textconv", "--filters") for o in opts):
            self.object_paths(objects)
            return
        self.ask("git.history-read", "git cat-file prints objects by name or id, which may "
                 "be files that deny_read names; the sandbox cannot mask git's object store")

    def quiet(self) -> None:
        """A subcommand that prints no file content, except in the forms checked here
        (`git rev-parse HEAD:.env` prints an object id, not the file)."""
        sub = self.sub
        if sub in _INTERACTIVE and self._interactive(sub):
            self.ask("git.index-read", f"git {sub} in this form prints the changes of "
                     "tracked files, which may include files that deny_read names")
        elif sub == "commit" and not self._message_given():
            self.ask("git.index-read", "git commit without a message opens an editor on a "
                     "template that may hold the staged diff (commit.verbose)")
        elif sub in ("branch", "tag", "for-each-ref") and any(
                "raw" in a for a in self.form.sub_args if a.startswith("-")):
            self.ask("git.history-read", f"git {sub} with %(raw) prints objects, which may "
                     "be files that deny_read names")
        elif sub == "config" and any(a.startswith("--blob") for a in self.form.sub_args):
            self.ask("git.history-read", "git config --blob reads a file from git's object "
                     "store")

    def _interactive(self, sub: str) -> bool:
        longs = _INTERACTIVE[sub]
        shorts = _INTERACTIVE_SHORT[sub]
        for a in self.form.sub_args:
            if a == "--":
                break
            if a.startswith("--"):
                head = a.partition("=")[0]
                if len(head) > 3 and any(n.startswith(head) for n in longs):
                    return True
            elif a.startswith("-") and any(c in shorts for c in a[1:]):
                return not short_value(sub, a)
        return False

    def _message_given(self) -> bool:
        assert self.parsed is not None
        return self.parsed.has("-m", "--message", "--file", "-C", "--reuse-message",
                               "--fixup", "--no-edit", "--dry-run")
