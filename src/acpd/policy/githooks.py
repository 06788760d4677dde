"""Git hooks a git command would run: code that the workspace can steer.

`git commit`, `git switch`, even `git status` (post-index-change) run hooks. A hook is a
program git starts, and what it runs is often in the workspace: `core.hooksPath = .husky`
(husky, lefthook) points git at files the agent can edit, and a hook installed in `.git/hooks`
by the pre-commit framework or husky 4 runs commands that `.pre-commit-config.yaml` or
`node_modules` name. So a git command that would run an existing hook runs workspace code,
like a build: it needs a trusted workspace or the sandbox (commands.py decides; this module
only says whether, and why).

Rules:
- The hooks a subcommand may run were measured with every hook installed as a marker: reads
  (`diff`, `log`, `show`, listing forms of `branch`/`tag`/`stash`, ...) run none; `status`
  and `add` only post-index-change; `commit`, `switch`, `branch NAME`... theirs (MEASURED);
  any other subcommand may run any hook.
- The hooks directory is every `core.hooksPath` git could read (the repository's config and
  `config.worktree`, the user's and the system's, every file they include, whatever its
  `includeIf` condition: a superset, never a guess), else `$GIT_DIR/hooks`. A relative path is
  taken from the work tree's top, `~/` from HOME.
- A hook counts when a file of a hook's name exists there and is executable (git ignores the
  others).
- Nothing is cached: the files are read on each decision. What cannot be read or parsed with
  certainty (a config over 1 MiB, includes nested past 10) counts as a hook that may run.

`-c`/`--config-env` and the GIT_CONFIG_* variables, which could name another hooks directory,
are denied elsewhere (rules and the assignment blocklist).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Final

from acpd.policy import pathtext
from acpd.policy.programs.git_index import Unreadable, find_repository
from acpd.policy.words import DYN

HOOKS: Final = frozenset({
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
    "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
    "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite",
    "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change",
})
NO_HOOKS: Final = frozenset({
    "diff", "log", "show", "rev-parse", "ls-files", "ls-tree", "blame", "annotate", "grep",
    "describe", "shortlog", "whatchanged", "cat-file", "rev-list", "for-each-ref", "show-ref",
    "name-rev", "merge-base", "count-objects", "check-ignore", "check-attr", "var", "version",
    "help", "range-diff", "diff-tree", "cherry", "remote", "config", "reflog",
})
"""Subcommands that run no hook (`remote` and `config` only in the forms other rules allow:
listing, `--get`)."""
_REFS: Final = frozenset({"reference-transaction"})
_CHECKOUT: Final = frozenset({"post-checkout", "post-index-change", "reference-transaction"})
MEASURED: Final = {
    "status": frozenset({"post-index-change"}),
    "add": frozenset({"post-index-change"}),
    "commit": frozenset({"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
                         "post-index-change", "reference-transaction", "post-rewrite"}),
    "branch": _REFS, "tag": _REFS, "update-ref": _REFS,
    "switch": _CHECKOUT, "checkout": _CHECKOUT,
    "stash": _CHECKOUT,
    "gc": frozenset({"reference-transaction", "pre-auto-gc"}),
}
"""The hooks a subcommand ran (git 2.39, every hook a marker) with a margin (`stash` as a
checkout, `commit --amend`'s post-rewrite); any other subcommand may run any hook."""
LISTING: Final = {"branch": ("-l", "--list", "-a", "--all", "-r", "--remotes", "--show-current",
                             "--contains", "--merged", "--no-merged", "--points-at", "-v", "-vv",
                             "--verbose", "--format", "--sort", "--column", "--no-column"),
                  "tag": ("-l", "--list", "-n", "--contains", "--no-contains", "--merged",
                          "--no-merged", "--points-at", "--format", "--sort", "--column")}
MAX_CONFIG: Final = 1 << 20
FEW: Final = 8
"""Up to this many hook names are looked up one by one; more, by listing the directory."""
MAX_INCLUDE_DEPTH: Final = 10
SYSTEM_CONFIG: Final = "/etc/gitconfig"


class Uncertain(Exception):
    """Which hooks would run cannot be told with certainty; the message says why."""


def hooks_that_run(sub: str, sub_args: list[str], cwd: str, home: str,
                   in_tree: list[str] | None = None) -> str | None:
    """Why `git SUB SUB_ARGS` run in `cwd` would run a hook (None: it would not). The hooks
    directories in the work tree are added to `in_tree`: a checkout can bring hooks there."""
    names = hooks_of(sub, sub_args)
    if not names:
        return None
    try:
        repo = find_repository(cwd)
        if repo is None:
            return None
        for directory in hook_dirs(repo.top, repo.git_dir, home):
            if in_tree is not None and _in_work_tree(directory, repo.top, repo.git_dir):
                in_tree.append(directory)
            found = _existing_hook(directory, names, in_tree)
            if found is not None:
                return (f"git {sub} would run the hook {found}, which can run code from the "
                        "workspace; the workspace is not trusted")
    except (Unreadable, Uncertain) as exc:
        return f"git {sub}: cannot tell which hooks it would run ({exc})"
    return None


def _below(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _in_work_tree(path: str, top: str, git_dir: str) -> bool:
    """Is `path` (as written, or its real path: `.git/hooks -> ../githooks`) a place in the
    work tree, where a checkout writes, rather than in a git directory?"""
    real = os.path.realpath(path)
    real_git = os.path.realpath(common_dir(git_dir) or git_dir)
    return any(_below(p, t) and not _below(p, g) for p, t, g in (
        (path, top, git_dir), (real, os.path.realpath(top), real_git)))


def hooks_of(sub: str, sub_args: list[str]) -> frozenset[str]:
    """The hooks `git SUB SUB_ARGS` may run (empty: none)."""
    if sub in NO_HOOKS:
        return frozenset()
    if sub == "stash" and sub_args[:1] in (["list"], ["show"]):
        return frozenset()
    if sub in LISTING and _lists(sub_args, LISTING[sub]):
        return frozenset()
    return MEASURED.get(sub, HOOKS)


def _lists(args: list[str], listing: tuple[str, ...]) -> bool:
    """`git branch` / `git tag` forms that only list (no name given, or a listing option)."""
    if any(a.split("=", 1)[0] in listing for a in args):
        return True
    return not any(not a.startswith("-") for a in args)


def hook_dirs(top: str, git_dir: str, home: str) -> list[str]:
    """Every directory git may take hooks from (`$GIT_DIR/hooks` and each core.hooksPath);
    raises Uncertain (also used by hookdirs.py: writes there are denied)."""
    return hooks_and_includes(top, git_dir, home)[0]


def hooks_and_includes(top: str, git_dir: str, home: str) -> tuple[list[str], list[str]]:
    """The hooks directories (see `hook_dirs`), and every file the configs git reads here
    include (`include.path`, `includeIf.*.path`, whatever the condition, transitively): git
    obeys those as its config. A linked worktree's admin directory (`git worktree add`) names
    the common directory in `commondir`: git takes the config and the hooks from there, and
    `config.worktree` from the admin directory. Raises Uncertain."""
    common = common_dir(git_dir) or git_dir
    configs = [pathtext.join(common, "config"), pathtext.join(git_dir, "config.worktree"),
               pathtext.join(home, ".gitconfig"),
               pathtext.join(os.environ.get("XDG_CONFIG_HOME") or pathtext.join(home, ".config"),
                            "git", "config"),
               SYSTEM_CONFIG]
    dirs = [pathtext.join(common, "hooks")]
    includes: list[str] = []
    for config in configs:
        for kind, value in _hooks_paths(config, home, 0):
            if kind == "include":
                includes.append(value)
                continue
            if DYN in value:
                raise Uncertain("core.hooksPath is not known before running")
            expanded = pathtext.join(home, value[2:]) if value.startswith("~/") else value
            dirs.append(pathtext.normpath(pathtext.join(top, expanded)))
    return dirs, includes


def common_dir(git_dir: str) -> str | None:
    """The directory `git_dir/commondir` names (a linked worktree's admin directory), or
    None without one. Raises Uncertain when it cannot be read or is not a path."""
    try:
        with open(pathtext.join(git_dir, "commondir"), "rb") as handle:
            text = handle.read(4097)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise Uncertain(f"cannot read {git_dir}/commondir: {exc.strerror}") from exc
    value = text.decode("utf-8", "surrogateescape").strip()
    if not value or len(text) > 4096:
        raise Uncertain(f"{git_dir}/commondir is not a path")
    return pathtext.normpath(pathtext.join(git_dir, value))


def _hooks_paths(path: str, home: str, depth: int) -> Iterator[tuple[str, str]]:
    """("hooks", each core.hooksPath) in the config file `path` and the files it includes,
    and ("include", each included file's normalized path)."""
    if depth > MAX_INCLUDE_DEPTH:
        raise Uncertain(f"config includes nested past {MAX_INCLUDE_DEPTH} at {path}")
    text = read_config(path)
    if text is None or not _may_name_hooks(text):
        return
    for section, key, value in config_entries(text, WANTED):
        if section == "core" and key == "hookspath":
            yield "hooks", value
        elif key == "path" and (section == "include" or section.startswith("includeif")):
            included = pathtext.join(home, value[2:]) if value.startswith("~/") else value
            included = pathtext.normpath(pathtext.join(pathtext.dirname(path), included))
            yield "include", included
            yield from _hooks_paths(included, home, depth + 1)


def _may_name_hooks(text: str) -> bool:
    """Most configs name neither: one case-folded search instead of a parse. A key cannot be
    split by a continuation (only values can), and escapes are for values too."""
    folded = text.lower()
    return "hookspath" in folded or "include" in folded


def read_config(path: str) -> str | None:
    """The text of the git config file at `path`; None when it is missing. Sized from fstat,
    capped at 1 MiB; raises Uncertain when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise Uncertain(f"cannot read {path}: {exc.strerror}") from exc
    try:
        size = os.fstat(fd).st_size
        if size > MAX_CONFIG:
            raise Uncertain(f"{path} is over 1 MiB")
        # Sized from fstat (a read of MAX_CONFIG would allocate 1 MiB each time); a file
        # that grew since is read up to the cap.
        data = os.read(fd, size + 1 if size else MAX_CONFIG + 1)
    except OSError as exc:
        raise Uncertain(f"cannot read {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG:
        raise Uncertain(f"{path} is over 1 MiB")
    return data.decode("utf-8", "surrogateescape")


WANTED: Final = frozenset({"hookspath", "path"})


def config_entries(text: str, keys: frozenset[str] | None = None
                   ) -> Iterator[tuple[str, str, str]]:
    """(section, key, value) of a git config file: the section lower-cased with its
    subsection (`includeif "gitdir:x"` -> `includeif.gitdir:x`), the key lower-cased, the
    value unquoted. Git's syntax: `[section "sub"]` or `[section.sub]` headers, which may be
    followed by an entry on the same line; `#`/`;` comments outside quotes; `\\` escapes and
    line continuations; a key alone means true. `keys`: only those keys (the others are not
    unquoted)."""
    section = ""
    for line in _logical_lines(text):
        rest = line.lstrip()
        if rest.startswith("["):
            end = _header_end(rest)
            section = _section_name(rest[1:end])
            rest = rest[end + 1:].lstrip()
        if not rest or rest[0] in "#;":
            continue
        key, equals, raw = rest.partition("=")
        key = key.strip().lower()
        if key and (keys is None or key in keys):
            yield section, key, _value(raw) if equals else "true"


def _logical_lines(text: str) -> Iterator[str]:
    """Lines with `\\`-newline continuations joined (a backslash escaped by another one
    does not continue)."""
    pending = ""
    for line in text.splitlines():
        stripped = line.rstrip("\r")
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            pending += stripped[:-1]
            continue
        yield pending + stripped
        pending = ""
    if pending:
        yield pending


def _header_end(rest: str) -> int:
    quoted = False
    i = 1
    while i < len(rest):
        ch = rest[i]
        if ch == "\\" and quoted:
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == "]" and not quoted:
            return i
        i += 1
    raise Uncertain("a config section header is not closed")


def _section_name(inside: str) -> str:
    name, _, sub = inside.strip().partition(" ")
    if sub:
        sub = sub.strip()
        if sub.startswith('"') and sub.endswith('"'):
            sub = sub[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        return f"{name.lower()}.{sub}"
    return name.lower()


def _value(raw: str) -> str:
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def _existing_hook(directory: str, names: frozenset[str],
                   dangling: list[str] | None = None) -> str | None:
    """The first hook of `names` present and executable in `directory` (a few names are
    looked up one by one, many by listing the directory). A hook that is a link to nothing
    yet is added to `dangling` (a checkout can make what it points to)."""
    if len(names) <= FEW:
        candidates = sorted(names)
    else:
        try:
            candidates = sorted(names.intersection(os.listdir(directory)))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise Uncertain(f"cannot list {directory}: {exc.strerror}") from exc
    for name in candidates:
        path = pathtext.join(directory, name)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            if dangling is not None and pathtext.islink(path):
                dangling.append(path)
            continue
        except OSError as exc:
            raise Uncertain(f"cannot examine {path}: {exc.strerror}") from exc
        if stat.S_ISREG(st.st_mode) and os.access(path, os.X_OK):
            return path
    return None
