"""git's object store read by other programs, and files a line creates before it reads them.

The kernel sandbox masks a denied file on disk; it cannot mask git's compressed copies of it
(every committed version of a `.env`, deleted since or not). `git_history` judges git's own
forms; this module judges everything else, whenever the policy has a `deny_read` pattern that
could name a file of the repository (`git_history`'s test: `may_reach` from its top):

A. Raw reads of a git directory by any program (a path argument, a redirect, a glob's
   expansion, a symbolic link's target, a recursive walk):
   - a path inside a `.git` directory (any depth: nested repositories, `.git/modules/*`,
     `.git/worktrees/*`) asks unless it is one of the entries that hold no file content
     (`HEAD`, `config`, `description`, `refs/`, `logs/`, `hooks/`, `info/`, `index`,
     `packed-refs`, the `*_HEAD` files, ...): `objects/` (loose objects, packs, alternates),
     `rr-cache/`, `lost-found/`, `COMMIT_EDITMSG` (`commit -v` leaves a diff there) do not;
   - outside a `.git`: a file shaped like a loose object (`xx/` + 38 or 62 hex digits) or a
     pack (`pack-HEX.pack`), or anything under an `objects` directory of a git directory (a
     bare repository, a `--git-dir`/`GIT_DIR` elsewhere, an alternate) asks;
   - a recursive walk that outputs content (tar, cp -r, diff -r, grep/rg with a text
     option: -a, --text, --binary-files=text, -z, rg -uuu/--binary...) asks when it starts in
     a git directory or its tree holds one it enters (hidden files included, not excluded by
     its name filters). Searches in their default binary mode are allowed: they print "binary
     file matches" for an object holding a NUL byte or (in a UTF-8 locale) invalid UTF-8.
   Every form is judged lexically and on the real path (a link into `.git/objects`).

B. Files a line creates before a later command of it reads them: tree scans and glob
   expansions are made before the line runs, so `git stash pop; cat *`, `git switch B && grep
   -r K .`, `tar -xf a.tar && grep -r K .` read files (a `.env` restored from history) that no
   scan saw. When one command of the line can create files from a source the judge does not
   see (git's object store, an archive, a compressed file, a patch, the network) and another
   command of it walks a tree, reads a glob's expansion, reads a path by name (a file the
   creator writes may be a link to anywhere) or prints tracked content through git, the line
   asks, in whatever order or control-flow position the two stand (loops and functions
   run "earlier" commands later).

Limits: a search in binary mode still prints lines of a compressed object that holds no NUL
byte when the locale treats its bytes as text (the C locale): a fragment matching the pattern,
compressed. A program the spec does not model, run sandboxed after a creator, is not a reader
here (the sandbox masks only the denied files present when it starts). State is per decision
(keyed to the decision's file-system memo); nothing is cached across decisions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from acpd.policy import pathtext
from acpd.policy.decision import Verdict
from acpd.policy.programs.git_history import _form as git_form
from acpd.policy.programs.git_index import MAGIC, may_reach
from acpd.policy.sandbox import PathRules, _normpath, current_decision, resolve
from acpd.policy.treescan import SCAN_LIMIT, name_filter, tree_facts

if TYPE_CHECKING:
    from acpd.policy.linectx import Ctx
    from acpd.policy.programs.spec import Model

Finding = tuple[Verdict, str, str]

CONTENT_FREE: Final = frozenset({
    "HEAD", "config", "config.worktree", "description", "packed-refs", "index", "shallow",
    "commondir", "gitdir", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "MERGE_MODE",
    "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "BISECT_HEAD", "AUTO_MERGE",
    "refs", "logs", "hooks", "info", "branches"})
"""Entries at the top of a git directory that hold names, ids, settings or code, never a
file's content."""
_LOOSE: Final = re.compile(r"[0-9a-fA-F]{38}(?:[0-9a-fA-F]{24})?")
_FANOUT: Final = re.compile(r"[0-9a-fA-F]{2}")
_PACK: Final = re.compile(r"pack-[0-9a-fA-F]{40,64}\.pack")
SEARCHES: Final = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep"})
NAME_WALKERS: Final = frozenset({"ls", "du", "find", "tree", "stat", "wc", "file", "git"})
"""Walkers whose output is names, sizes or counts (or git, judged by `git_history`)."""


def store_place(path: str) -> tuple[str, str] | None:
    """(git directory, repository top or MAGIC) when the absolute normal `path` lies in a
    git directory's content-bearing part; None otherwise."""
    low = path.lower()
    name = path[path.rfind("/") + 1 :]
    if ".git" not in low and "objects" not in low and not name.startswith("pack-") and \
            len(name) not in (38, 62):
        return None  # (the common case: one scan of the string)
    comps = path.split("/")
    folded = low.split("/") if ".git" in low else comps
    if ".git" in folded:  # (case-insensitive file systems: `.GIT/objects`)
        k = folded.index(".git")
        rest = comps[k + 1 :]
        if rest and rest[0] not in CONTENT_FREE:
            return "/".join(comps[: k + 1]), "/".join(comps[:k]) or "/"
        return None
    if (_LOOSE.fullmatch(name) and len(comps) > 1 and _FANOUT.fullmatch(comps[-2])) or \
            _PACK.fullmatch(name):
        return pathtext.dirname(path), MAGIC
    folded = low.split("/") if "objects" in low else []
    if "objects" in folded:
        k = len(folded) - 1 - folded[::-1].index("objects")
        git_dir = "/".join(comps[:k]) or "/"
        if pathtext.isfile(pathtext.join(git_dir, "HEAD")) or \
                pathtext.isdir(pathtext.join("/".join(comps[: k + 1]), "pack")):
            return git_dir, MAGIC
    return None


def git_dir_itself(path: str) -> bool:
    """`path` is a git directory (read as a tree it holds the object store)."""
    if pathtext.basename(path) == ".git":
        return pathtext.isdir(path)
    return pathtext.isfile(pathtext.join(path, "HEAD")) and pathtext.isdir(
        pathtext.join(path, "objects"))


def applies(top: str, rules: PathRules) -> str | None:
    """A deny_read pattern that could name a file of the repository at `top` (MAGIC:
    unknown), as `git_history` decides for history forms."""
    for pat in rules.deny_read:
        if may_reach(top, pat, rules.roots):
            return pat.text
    return None


def read_finding(raw: str, cwd: str, rules: PathRules) -> Finding | None:
    """A read of `raw` (from `cwd`) by a program that prints what it reads."""
    if not rules.deny_read or not raw or "\x00" in raw:
        return None
    state = _state()
    if state is not None:
        state.pending_read = True  # (the command it belongs to is recorded next: B)
    lexical = _normpath(pathtext.join(cwd, raw))
    if lexical.startswith("//"):
        lexical = "/" + lexical.lstrip("/")
    try:
        real = resolve(lexical)  # (judge_path resolved it: this decision's memo)
    except (OSError, ValueError):
        real = lexical
    for form in (lexical,) if real == lexical else (lexical, real):
        place = store_place(form)
        if place is None:
            continue
        pattern = applies(place[1], rules)
        if pattern is not None:
            shown = raw if form == lexical else f"{raw} (a link to {form})"
            return ("ask", "git.object-store-read",
                    f"reading {shown} reads git's object store in {place[0]}, which holds "
                    f"committed copies of files deny_read names ({pattern!r}); the sandbox "
                    "cannot mask it")
    return None


_SEARCH_VALUES: Final = {"grep": "efmABCDd", "egrep": "efmABCDd", "fgrep": "efmABCDd",
                         "zgrep": "efmABCDd", "rg": "efgtTjmABCMrEd"}
_TEXT_LONG: Final = ("text", "null-data", "binary")


def text_search(program: str, args: list[str]) -> bool:
    """A search told to print binary files as text, or to split lines at NUL bytes (then
    nothing marks a file binary): grep -a/-z/--text/--null-data/--binary-files=text, rg
    -a/--text/--null-data/--binary/-uuu (long options by any prefix)."""
    values = _SEARCH_VALUES.get(program, "")
    u_count = 0
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            head, eq, value = arg[2:].partition("=")
            if not head:
                continue
            if any(n.startswith(head) for n in _TEXT_LONG) and not (
                    eq and "binary-files".startswith(head)):
                return True
            if "binary-files".startswith(head) and len(head) > 6 and value.startswith("t"):
                return True
            if "unrestricted".startswith(head) and len(head) > 1:
                u_count += 1
        elif arg.startswith("-") and len(arg) > 1:
            for c in arg[1:]:
                if c in "az" or (c == "U" and program != "rg"):
                    return True
                if c == "u":
                    u_count += 1
                if c in values:
                    break  # takes a value: the rest of the word is it
    return program == "rg" and u_count >= 3


def walk_findings(program: str, args: list[str], trees: list[str], cwds: list[str],
                  rules: PathRules, hidden: bool,
                  filters: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
                  ) -> list[Finding]:
    """A recursive read that outputs content and enters a git directory."""
    if not rules.deny_read or program in NAME_WALKERS or (
            program in SEARCHES and not text_search(program, args)):
        return []
    skipped = name_filter(*filters)
    found: list[Finding] = []
    for raw in trees:
        for cwd in cwds:
            start = _normpath(raw if raw.startswith("/") else f"{cwd.rstrip('/')}/{raw}")
            if any(c in start for c in "*?["):
                continue  # a glob word: its expansion is judged path by path
            git = _entered_git(start, hidden, skipped)
            if git is None:
                continue
            pattern = applies(MAGIC if git[1] is None else git[1], rules)
            if pattern is not None:
                found.append(("ask", "git.object-store-read",
                              f"{program} reads {raw} recursively, and with it the git "
                              f"directory {git[0]}, whose object store holds committed copies "
                              f"of files deny_read names ({pattern!r}); the sandbox cannot "
                              "mask it"))
                return found
    return found


def _entered_git(start: str, hidden: bool,
                 skipped: object) -> tuple[str, str | None] | None:
    """The git directory a walk of `start` enters: (its path, its repository's top)."""
    for form in {start, resolve(start)}:
        place = store_place(form + "/objects")
        if place is not None and (".git" in form.split("/") or git_dir_itself(form)):
            return place[0], None if place[1] == MAGIC else place[1]
        if git_dir_itself(form):
            return form, None
    if not hidden:
        return None
    if callable(skipped) and skipped(pathtext.join(start, ".git"), True):
        return None
    facts = tree_facts(start, SCAN_LIMIT)
    if facts is None or facts.git is None:
        return None
    if callable(skipped) and skipped(pathtext.join(facts.git, "objects", "00", "0" * 38), False):
        return None  # (a search's --include never names an object file)
    return facts.git, pathtext.dirname(facts.git)


# -- B: files a line creates before it reads them -------------------------------------------

_GIT_CREATES: Final = frozenset({
    "checkout", "switch", "restore", "merge", "pull", "rebase", "cherry-pick", "revert",
    "reset", "am", "apply", "read-tree", "checkout-index", "worktree", "clone", "submodule",
    "sparse-checkout", "bisect", "unpack-file", "fsck"})
_GIT_STASH_CREATES: Final = frozenset({"pop", "apply", "branch", "push", "save"})
"""Every stash form that changes the work tree (push and save reset it to HEAD, whose
tracked links it puts back)."""
_GIT_READS: Final = frozenset({"diff", "grep", "show", "blame", "annotate", "archive",
                               "format-patch", "difftool"})
_EXTRACTORS: Final = frozenset({
    "unzip", "7z", "7za", "7zr", "unrar", "cpio", "bsdtar", "bsdcpio", "ar", "pax", "jar",
    "gunzip", "bunzip2", "unxz", "unlzma", "unzstd", "lz4", "unlz4", "uncompress", "patch",
    "dpkg-deb", "rpm2cpio", "wget", "curl", "scp", "rsync", "svn", "hg", "unsquashfs"})
"""Programs that write files whose names and contents come from an archive, a patch or the
network (links to files outside the workspace included). Package managers are not here: what
they unpack lands in their own trees, and a build after them is the common case."""
_DECOMPRESSORS: Final = frozenset({"gzip", "bzip2", "xz", "lzma", "zstd", "pigz", "lzip", "lzop"})


class LineRecord:
    """What the commands of the line being judged did to git's objects (one per decision)."""

    __slots__ = ("calls", "creators", "pending_read", "readers", "told")

    def __init__(self) -> None:
        self.calls = 0
        self.creators: dict[int, str] = {}
        self.readers: dict[int, str] = {}
        self.told = False
        self.pending_read = False
        """A path was read since the last command was recorded (its redirects and
        arguments)."""


def _state() -> LineRecord | None:
    """This decision's record (kept with its file-system memo, which lives exactly as long
    as the decision); None outside a decision."""
    current = current_decision()
    if current is None:
        return None
    record = current.line
    if record is None:
        record = current.line = LineRecord()
    return record


def creates_unseen(program: str, args: list[str]) -> str | None:
    """What a command creates files from that the judge does not see, or None."""
    if program == "git":
        form = git_form(tuple(args))
        if form.sub is None or _new_branch_only(args):
            return None
        if form.sub in _GIT_CREATES or (form.sub == "stash" and
                                        form.stash_sub in _GIT_STASH_CREATES):
            return f"git {form.sub}" + (f" {form.stash_sub}" if form.sub == "stash" else "") \
                + " (git's object store)"
        return None
    if program == "tar":
        if args and "x" in args[0] and (not args[0].startswith("--") or args[0] in (
                "--extract", "--get")):
            return "tar -x (an archive)"
        for a in args:
            if a in ("--extract", "--get") or (a[:1] == "-" and a[1:2] != "-" and "x" in a):
                return "tar -x (an archive)"
        return None
    if program in _DECOMPRESSORS:
        if any(a.startswith("--d") or a.startswith("--u") or (
                a.startswith("-") and not a.startswith("--") and "d" in a) for a in args):
            return f"{program} -d (a compressed file)"
        return None
    if program in _EXTRACTORS:
        return f"{program} (an archive, a patch or the network)"
    return None


def _new_branch_only(args: list[str]) -> bool:
    """`git switch -c NEW` or `git checkout -b NEW` with no start point: a new branch at
    HEAD, no file changed."""
    form = git_form(tuple(args))
    if form.sub == "switch" and form.parsed is not None:
        return not form.parsed.positionals and bool(form.parsed.options) and all(
            opt.name in ("-c", "--create", "-q", "--quiet") for opt, _ in form.parsed.options)
    return form.sub == "checkout" and args[-3:-1] == ["checkout", "-b"] and \
        args.index("checkout") == len(args) - 3 and not args[-1].startswith("-")


def reads_created(program: str, args: list[str], walks: bool, globbed: bool,
                  named: bool = False) -> str | None:
    """How a command reads files that may have been created earlier in the line, or None.
    `named`: it reads paths by name (a file a creator writes may be a link to anywhere)."""
    if walks and program not in NAME_WALKERS:
        return f"{program} walks a tree"
    if globbed and program not in NAME_WALKERS and program != "git":
        return f"{program} reads a glob's expansion"
    if named and program not in NAME_WALKERS:
        return f"{program} reads files by name (which may be new, or links to anywhere)"
    if program == "git":
        form = git_form(tuple(args))
        if form.sub in _GIT_READS or (form.sub == "stash" and form.stash_sub == "show"):
            return f"git {form.sub} prints tracked content"
    return None


def line_finding(program: str, args: list[str], walks: bool, globbed: bool,
                 rules: Callable[[], PathRules], made: str | None) -> Finding | None:
    """Record this command's part in the line; the ask once a creator and a reader (two
    different commands) are both in it and the policy has a deny_read list (`rules` is
    called only then: a line that names no path never resolves its roots). `made`: what
    the command creates unseen (`creates_unseen`), worked out once by the caller."""
    state = _state()
    if state is None:
        return None
    state.calls += 1
    me = state.calls
    named, state.pending_read = state.pending_read, False
    if made is not None:
        state.creators[me] = made
    read = reads_created(program, args, walks, globbed, named)
    if read is not None:
        state.readers[me] = read
    if state.told or not state.creators or not state.readers or not rules().deny_read:
        return None
    for c, made_by in state.creators.items():
        for r, read_by in state.readers.items():
            if c != r:
                state.told = True
                return ("ask", "line.creates-unseen",
                        f"{made_by} can create files that no scan of this line saw, and "
                        f"{read_by}: the judge looked at the files before the line ran, so "
                        "a file deny_read names that appears in between (a .env restored "
                        "from history) would be read unasked")
    return None


def command_findings(program: str, args: list[str], mdl: Model | None,
                     ctx: Ctx) -> list[Finding]:
    """The hook `commands` calls for every simple command, after its own checks."""
    found: list[Finding] = []
    walks = mdl is not None and bool(mdl.trees)
    if walks and ctx.out.verdict == "allow":
        assert mdl is not None
        found += walk_findings(program, args, mdl.trees, ctx.cwds, ctx.paths, mdl.hidden,
                               (mdl.include, mdl.exclude, mdl.exclude_dirs))
    globbed = ctx.globs is not None and (mdl is None or bool(mdl.reads))
    made = creates_unseen(program, args)
    if made is not None:
        ctx.wrote_anything()  # what a checkout or an archive writes is not on the line
    hit = line_finding(program, args, walks, globbed, lambda: ctx.paths, made)
    if hit is not None:
        found.append(hit)
    return found
