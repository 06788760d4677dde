"""git: global options, then one option table per subcommand the default policy allows.

Git's parse-options accepts unambiguous prefixes of long options and stuck short values
(`-n5`, `-U3`), like getopt_long. What the tables do not know is unknown (ask unless
sandboxed). Destructive forms that have no `--force` in their name (`switch -f`, `branch -D`,
`stash drop`, `reflog expire`...) are `ask` whatever the sandbox: they destroy history that
a workspace checkpoint may not hold. `-C DIR`, `--git-dir`, `--work-tree` are recorded for the
engine, which asks when they name a repository that is not the workspace's own.
"""

from __future__ import annotations

from typing import Final

from acpd.policy import pathtext
from acpd.policy.programs.spec import Model, Parsed, Program, apply_roles, parse_argv, program

_H: Final = " help"
WHOLE_TREE: Final = ":/"
"""A tree operand meaning the whole work tree (git's top-of-tree pathspec)."""
GLOBAL: Final = program(
    "git", "pPvhC:c:",
    "paginate no-pager git-dir= work-tree= namespace= bare no-replace-objects "
    "no-lazy-fetch literal-pathspecs glob-pathspecs noglob-pathspecs icase-pathspecs "
    "no-optional-locks exec-path[=] html-path man-path info-path version config-env= "
    "super-prefix= list-cmds= attr-source=" + _H,
    {"-c/--config-env/--super-prefix": "deny:sets git configuration (pagers, aliases, hooks)",
     "--exec-path": "unknown", "--bare": "ask:treats the directory as a bare repository",
     "--attr-source": "unknown"},
    permute=False)

_DIFF: Final = (
    "patch no-patch raw patch-with-raw patch-with-stat indent-heuristic no-indent-heuristic "
    "minimal patience histogram diff-algorithm= anchored= stat[=] stat-width= "
    "stat-name-width= stat-count= stat-graph-width= compact-summary numstat shortstat "
    "dirstat[=] cumulative dirstat-by-file[=] summary name-only name-status submodule[=] "
    "color[=] no-color color-moved[=] no-color-moved color-moved-ws= no-color-moved-ws "
    "word-diff[=] word-diff-regex= color-words[=] no-renames rename-empty no-rename-empty "
    "check ws-error-highlight= full-index binary abbrev[=] no-abbrev break-rewrites[=] "
    "find-renames[=] find-copies[=] find-copies-harder irreversible-delete diff-filter= "
    "find-object= pickaxe-all pickaxe-regex skip-to= rotate-to= relative[=] no-relative "
    "text ignore-cr-at-eol ignore-space-at-eol ignore-space-change ignore-all-space "
    "ignore-blank-lines ignore-matching-lines= inter-hunk-context= function-context "
    "exit-code quiet ext-diff no-ext-diff textconv no-textconv ignore-submodules[=] "
    "src-prefix= dst-prefix= no-prefix default-prefix line-prefix= "
    "ita-invisible-in-index ita-visible-in-index unified= output= output-indicator-new= "
    "output-indicator-old= output-indicator-context= cached staged merge-base no-index "
    "base ours theirs follow cc combined-all-paths diff-merges= no-diff-merges remerge-diff "
    "dd ")
_DIFF_SHORT: Final = "pusztRabwWqMCBDlSGOIUX"
_DIFF_ROLES: Final = {
    "--output": "deny:writes a file anywhere",
    "--ext-diff/--textconv": "ask:runs external diff drivers",
    "-O": "read",
}
_LOG: Final = (
    "oneline graph decorate[=] no-decorate decorate-refs= decorate-refs-exclude= source "
    "use-mailmap mailmap no-mailmap full-diff log-size max-count= skip= since= after= "
    "until= before= since-as-filter= author= committer= grep-reflog= grep= all-match "
    "invert-grep regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp "
    "remove-empty merges no-merges min-parents= max-parents= no-min-parents no-max-parents "
    "first-parent exclude-first-parent-only not all branches[=] tags[=] remotes[=] glob= "
    "exclude= exclude-hidden= reflog alternate-refs single-worktree ignore-missing bisect "
    "cherry-mark cherry-pick left-only right-only cherry walk-reflogs merge boundary "
    "simplify-by-decoration show-pulls full-history dense sparse simplify-merges "
    "ancestry-path[=] date-order author-date-order topo-order reverse no-walk[=] do-walk "
    "pretty[=] format= abbrev-commit no-abbrev-commit encoding= expand-tabs[=] "
    "no-expand-tabs notes[=] no-notes show-notes[=] show-notes-by-default standard-notes "
    "no-standard-notes show-signature relative-date date= parents children left-right "
    "show-linear-break[=] count clear-decorations no-graph ")
_LOG_SHORT: Final = "ngiEFPmcL"


def _prog(name: str, short: str, long: str, roles: dict[str, str] | None = None,
          **kw: object) -> Program:
    return program(name, short, long + _H, roles, **kw)


def _log_like(name: str, extra: str = "", extra_short: str = "") -> Program:
    return _prog(name, _DIFF_SHORT.replace("O", "O:").replace("U", "U::").replace(
        "M", "M::").replace("C", "C::").replace("B", "B::").replace("l", "l::").replace(
        "S", "S:").replace("G", "G:").replace("I", "I:").replace("X", "X::")
        + _LOG_SHORT.replace("n", "n:").replace("L", "L:") + extra_short,
        _DIFF + _LOG + extra, {**_DIFF_ROLES, "-L": "unknown"}, numeric=True)


SUB: dict[str, Program] = {
    "status": _prog("status", "sbvuz", "short branch show-stash porcelain[=] long verbose "
                    "-u/untracked-files[=] ignore-submodules[=] ignored[=] null column[=] "
                    "no-column ahead-behind no-ahead-behind renames no-renames "
                    "find-renames[=]"),
    "log": _log_like("log"),
    "show": _log_like("show"),
    "whatchanged": _log_like("whatchanged"),
    "diff": _log_like("diff"),
    "shortlog": _log_like("shortlog", "numbered summary email group= committer",
                          "nsew::"),
    "rev-parse": _prog("rev-parse", "q", "show-toplevel git-dir abbrev-ref[=] short[=] verify "
                       "quiet is-inside-work-tree is-bare-repository is-inside-git-dir "
                       "is-shallow-repository show-prefix show-cdup git-common-dir "
                       "absolute-git-dir symbolic symbolic-full-name all branches[=] "
                       "tags[=] remotes[=] default= revs-only no-revs flags no-flags sq "
                       "sq-quote not prefix= local-env-vars resolve-git-dir git-path "
                       "show-superproject-working-tree shared-index-path "
                       "show-object-format[=] show-ref-format since= until= after= "
                       "before= disambiguate= glob= exclude= exclude-hidden= path-format= "
                       "end-of-options", positionals="text"),
    "ls-files": _prog("ls-files", "cdmoiskutvfzx:X:", "cached deleted modified others "
                      "ignored stage unmerged killed directory no-empty-directory eol "
                      "deduplicate exclude= exclude-from= exclude-per-directory= "
                      "exclude-standard error-unmatch with-tree= full-name "
                      "recurse-submodules abbrev[=] debug sparse format= resolve-undo",
                      {"-X/--exclude-from": "read"}, positionals="text"),
    "blame": _prog("blame", "bfnpcltsewL:S:M::C::", "root show-stats score-debug show-name "
                   "show-number porcelain line-porcelain incremental show-email "
                   "abbrev= reverse= first-parent encoding= contents= date= progress "
                   "no-progress ignore-rev= ignore-revs-file= color-lines color-by-age "
                   "minimal", {"-S/--contents/--ignore-revs-file": "read"}),
    "grep": _prog("grep", "aiIrwvhHEGPFnlLzocpWqe:f:m:A:B:C:O::", "cached no-index untracked "
                  "no-exclude-standard exclude-standard recurse-submodules text textconv "
                  "no-textconv ignore-case max-depth= recursive no-recursive word-regexp "
                  "no-word-regexp invert-match full-name extended-regexp basic-regexp "
                  "perl-regexp fixed-strings line-number column files-with-matches "
                  "name-only files-without-match null only-matching count color[=] no-color "
                  "break heading show-function context= after-context= before-context= "
                  "function-context threads= and or not all-match quiet max-count= "
                  "open-files-in-pager[=]",
                  {"-e": "pattern", "-f": "read,pattern", "--textconv": "ask:runs textconv "
                   "drivers", "-O/--open-files-in-pager": "deny:runs a pager command"},
                  numeric=True, positionals="pattern-read"),
    "describe": _prog("describe", "", "all tags contains abbrev= candidates= exact-match debug "
                      "long match= exclude= always first-parent dirty[=] broken[=]",
                      positionals="text"),
    "add": _prog("add", "nvipeNz", "dry-run verbose -f/force interactive patch edit -u/update "
                 "-A/all no-ignore-removal no-all ignore-removal intent-to-add refresh "
                 "ignore-errors ignore-missing no-warn-embedded-repo renormalize chmod= "
                 "pathspec-from-file= pathspec-file-nul sparse",
                 {"--pathspec-from-file": "list"}),
    "commit": _prog("commit", "apqvsnezioC:c:m:F:t:u::S::", "all patch reuse-message= "
                    "reedit-message= fixup= squash= reset-author short branch porcelain long "
                    "null -F/file= author= date= message= -t/template= signoff no-signoff "
                    "trailer= no-verify verify allow-empty allow-empty-message cleanup= edit "
                    "no-edit amend no-post-rewrite include only pathspec-from-file= "
                    "pathspec-file-nul untracked-files[=] verbose quiet dry-run status "
                    "no-status gpg-sign[=] no-gpg-sign",
                    {"-F/--file/-t/--template": "read", "--pathspec-from-file": "list"}),
    "switch": _prog("switch", "c:C:dfmqt::", "create= force-create= detach guess no-guess "
                    "force discard-changes merge conflict= quiet progress no-progress "
                    "track[=] no-track orphan= ignore-other-worktrees recurse-submodules "
                    "no-recurse-submodules",
                    {"-f/--force/--discard-changes": "ask:discards local changes",
                     "-C/--force-create": "ask:resets an existing branch",
                     "--orphan": "ask:empties the working tree"}, positionals="text"),
    "config": _prog("config", "lz", "get get-all get-regexp get-urlmatch list show-origin "
                    "show-scope name-only null type= bool int bool-or-int path expiry-date "
                    "default= local includes no-includes", positionals="text"),
    "remote": _prog("remote", "vn", "verbose", positionals="text"),
}
SUB["branch"] = _prog(
    "branch", "arlvqicmdDfMCut:",
    "all remotes list verbose quiet ignore-case color[=] no-color column[=] no-column sort= "
    "merged[=] no-merged[=] contains[=] no-contains[=] points-at= format= show-current "
    "omit-empty abbrev= no-abbrev create-reflog copy move delete force set-upstream-to= "
    "unset-upstream edit-description track[=] no-track recurse-submodules",
    {"-d/-D/--delete": "ask:deletes a branch", "-f/--force/-M/-C": "ask:overwrites a branch",
     "-u/--set-upstream-to/--unset-upstream/--edit-description/-t/--track":
     "ask:writes the repository's configuration"},
    positionals="text")
SUB["tag"] = _prog(
    "tag", "lnvdfasmiF:u:e", "list sort= contains[=] no-contains[=] merged[=] no-merged[=] "
    "points-at= column[=] no-column format= color[=] ignore-case omit-empty delete force "
    "annotate sign local-user= message= file= verify edit no-edit cleanup= create-reflog "
    "trailer=",
    {"-d/--delete": "ask:deletes a tag", "-f/--force": "ask:overwrites a tag",
     "-F/--file": "read"}, positionals="text")

_STASH_SUB: Final = {
    "push": _prog("push", "pkqSm:", "patch keep-index no-keep-index -u/include-untracked -a/all "
                  "quiet staged message= pathspec-from-file= pathspec-file-nul",
                  {"--pathspec-from-file": "list"}),
    "save": _prog("save", "pkq", "patch keep-index no-keep-index -u/include-untracked -a/all "
                  "quiet", positionals="text"),
    "list": _log_like("list"),
    "show": _log_like("show", "include-untracked only-untracked no-include-untracked", "u"),
    "pop": _prog("pop", "q", "index quiet", positionals="text"),
    "apply": _prog("apply", "q", "index quiet", positionals="text"),
    "create": _prog("create", "", "", positionals="text"),
    "branch": _prog("branch", "", "", positionals="text"),
}
STASH_SUB: Final = _STASH_SUB
_STASH_DESTROY: Final = {"drop": "drops a stash", "clear": "drops every stash",
                         "store": "rewrites the stash list"}
_REFLOG_DESTROY: Final = {"expire": "expires reflog entries", "delete": "deletes reflog entries"}


def model_git(args: list[str], model: Model) -> None:
    glob = parse_argv(GLOBAL, args, model)
    apply_roles(glob, model)
    model.git_dirs.extend(glob.values("-C"))
    for opt in ("--git-dir", "--work-tree", "--namespace"):
        if glob.has(opt):
            model.add("ask", "git.other-repository", f"git {opt} points git at another "
                      "repository or work tree")
    rest = list(glob.positionals)
    if not rest:
        if not glob.options:
            model.ask_unknown("no subcommand")
        return
    sub, sub_args = rest[0], rest[1:]
    if sub == "stash":
        _stash(sub_args, model)
        _relative_to_c(model)
        return
    if sub == "reflog":
        _reflog(sub_args, model)
        return
    prog = SUB.get(sub)
    if prog is None:
        model.ask_unknown(f"subcommand {sub!r} is outside what the spec models")
        return
    parsed = parse_argv(prog, sub_args, model)
    apply_roles(parsed, model)
    _sub_paths(sub, parsed, model)
    _relative_to_c(model)


def _relative_to_c(model: Model) -> None:
    """`git -C a -C b add x` runs in a/b: its path operands are relative to that."""
    if not model.git_dirs:
        return
    where = ""
    for d in model.git_dirs:
        where = pathtext.join(where, d)
    model.reads[:] = [pathtext.join(where, p) for p in model.reads]
    model.trees[:] = [p if p == WHOLE_TREE else pathtext.join(where, p) for p in model.trees]


def _sub_paths(sub: str, parsed: Parsed, model: Model) -> None:
    pos = list(parsed.positionals)
    if sub == "diff" and parsed.has("--no-index"):
        model.reads.extend(pos)
        model.trees.extend(pos)
    elif sub == "grep":
        if not parsed.role("pattern") and pos:
            pos = pos[1:]
        model.reads.extend(pos)
        if parsed.has("--no-index", "--untracked"):
            model.reads.extend(pos or ["."])
            model.trees.extend(pos or ["."])
    elif sub == "add":
        # staged content is shown by `git diff --cached`: adding a tree that holds deny_read
        # files reads them (git skips what .gitignore ignores, unless --force)
        model.reads.extend(p for p in pos if not p.startswith(":"))
        if not parsed.has("--update"):
            # `git add -A` (no pathspec) and `:/...` pathspecs take the whole work tree
            model.trees.extend([WHOLE_TREE if p.startswith(":") else p for p in pos]
                               or ([WHOLE_TREE] if parsed.has("--all") else []))
            model.gitignore = not parsed.has("--force")
    elif sub in ("commit", "blame", "status", "log", "show", "diff", "whatchanged"):
        # pathspecs (and revisions, which name no denied file): `git log -p -- .env` shows it
        model.reads.extend(p for p in pos if not p.startswith(":"))
    elif sub == "config" and _config_may_write(pos):
        model.ask_unknown("a config form that may write")
    elif sub == "remote" and pos and pos[0] not in ("show", "get-url"):
        model.ask_unknown(f"remote {pos[0]} changes the configuration")


def _config_may_write(pos: list[str]) -> bool:
    if pos[:1] in (["get"], ["list"]):
        return len(pos) > 2
    return len(pos) != 1 or pos[0] in ("set", "unset", "edit", "rename-section",
                                       "remove-section")


def _stash(args: list[str], model: Model) -> None:
    if args and args[0] in _STASH_DESTROY:
        model.add("ask", "git.destructive", f"git stash {args[0]} {_STASH_DESTROY[args[0]]}")
        return
    sub = args[0] if args and not args[0].startswith("-") else "push"
    rest = args[1:] if args and not args[0].startswith("-") else args
    prog = _STASH_SUB.get(sub)
    if prog is None:
        model.ask_unknown(f"stash {sub!r} is outside what the spec models")
        return
    parsed = parse_argv(prog, rest, model)
    apply_roles(parsed, model)
    if sub == "push":
        model.reads.extend(parsed.positionals)
    if sub in ("push", "save") and parsed.has("--include-untracked", "--all"):
        model.trees.extend(parsed.positionals if sub == "push" and parsed.positionals
                           else [WHOLE_TREE])
        model.gitignore = not parsed.has("--all")


def _reflog(args: list[str], model: Model) -> None:
    if args and args[0] in _REFLOG_DESTROY:
        model.add("ask", "git.destructive", f"git reflog {args[0]} "
                  f"{_REFLOG_DESTROY[args[0]]}")
        return
    if args and args[0] in ("show", "list", "exists"):
        args = args[1:]
    apply_roles(parse_argv(SUB["log"], args, model), model)
