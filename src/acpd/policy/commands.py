"""The judge of one simple command, after its wrappers are peeled: the rules that name it, its
argument spec (`policy/programs`), its paths, and what it does on disk (`effects`).

A mixin of `CompiledPolicy` (engine.py), which walks the command line and owns the path check
(`_path`) and the context; this module decides about one argv:

- every rule naming the program applies, strictest wins; an allow rule marked `modeled` holds
  only when the program's spec models the whole argv, or the command runs sandboxed;
- a function named like a program does not switch its rules off: ask, and judged as the program;
- build and test tools allowed for trusted workspaces are also allowed when sandboxed;
- the spec's reads, writes and link targets go through the path policy; its disk checks
  (deletions, tree scans, copies, other repositories) run last, bounded, never cached.
"""

from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING, Final

from mypy_extensions import trait

from acpd.policy import budget as budget_mod
from acpd.policy import (
    effects,
    gitdirs,
    gitobjects,
    globmatch,
    pathtext,
    programs,
    renames,
    treescan,
)
from acpd.policy.argspec import Scan, path_args, scan
from acpd.policy.blocklist import BLOCKED_BUILTINS, SHELLS
from acpd.policy.cdphysical import cd_destination, cd_operands
from acpd.policy.checks import CHECKS, CheckContext
from acpd.policy.hookdirs import hooks_write
from acpd.policy.pathlookup import shadow_finding
from acpd.policy.programtable import ProgramTable
from acpd.policy.rulematch import GLOB, CompiledRule, rule_matches
from acpd.policy.rules import GlobRule, Settings
from acpd.policy.sandbox import has_parent_step, inside, physical, resolve
from acpd.policy.toolpins import PINNED, pin_finding
from acpd.policy.words import DYN
from acpd.policy.wrappers import WRAPPERS

if TYPE_CHECKING:
    from acpd.policy.linectx import Ctx as _Ctx

SYSTEM_BIN: Final = ("/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin",
                     "/opt/homebrew/bin")
_PATH_COMMANDS: Final = frozenset({"dd", "find"})


MAX_LANDED_TOP: Final = 512
"""A copied or moved tree's top-level entries each judged where they land, at most."""
FILE_MAKERS: Final = frozenset({"cp", "touch", "tee", "dd", "sort", "sed", "uniq", "truncate",
                                "shuf", "split", "csplit", "gzip", "gunzip", "bzip2", "xz",
                                "base64", "chmod", "chown", "chgrp"})
"""Programs whose writes make regular files only (a copy without -r, -s...), or change only
what a file holds or its mode: a write of theirs below a tree a line copies changes a file's
content or adds a file, never a directory or a link (linectx `_over`)."""


@trait  # a mixin of CompiledPolicy: compiled (mypyc), a class of two bases needs it
class CommandJudge:
    """Judging one argv; the attributes are set by `CompiledPolicy.__init__`."""

    settings: Settings
    network: frozenset[str]
    blocked: frozenset[str]
    command_names: frozenset[str]
    conditioned: frozenset[str]
    allowed: frozenset[str] | None
    glob_rules: tuple[tuple[re.Pattern[str], GlobRule], ...]
    grammar: dict[str, frozenset[str]]
    _by_name: dict[str, list[CompiledRule]]
    _glob_rules: list[CompiledRule]
    table: ProgramTable

    def _path(self, raw: str, mode: str, ctx: _Ctx, *, redirect: bool = False,
              entry: str | None = None, made: str | None = None) -> None:
        raise NotImplementedError  # CompiledPolicy's

    def _command(self, argv: list[str], ctx: _Ctx, depth: int) -> None:
        outer = ctx.mine  # a command inside another's payload: the outer one's writes stay its
        try:
            self._one_command(argv, ctx, depth)
        finally:
            ctx.mine = outer

    def _one_command(self, argv: list[str], ctx: _Ctx, depth: int) -> None:
        out = ctx.out
        name = argv[0]
        if DYN in name:
            out.add("ask", "command.dynamic", "the command name is not known before running")
            return
        base = name.rpartition("/")[2] if "/" in name else name
        if ("*" in base or "?" in base or "[" in base) and GLOB.search(base):
            out.add("ask", "command.glob", f"the command name {name!r} is a glob")
            for cand in sorted({*self.command_names, *BLOCKED_BUILTINS, *SHELLS}):
                if globmatch.fnmatchcase(cand, base):
                    self._command([cand, *argv[1:]], ctx, depth)
            return
        cap_allow = False
        if "/" in name:
            full = pathtext.normpath(name if name.startswith("/") else pathtext.join(ctx.cwd, name))
            if "\x00" in full:  # `$'\0'`: no program has that path (and realpath would raise)
                out.add("deny", "command.nul", f"the command path {name!r} holds a NUL byte")
                return
            real = resolve(full)
            if inside(full, ctx.roots) and inside(real, ctx.roots):
                self._workspace_script(name, ctx)
                return
            if pathtext.dirname(full) not in SYSTEM_BIN:
                cap_allow = True
                out.add("ask", "command.path", f"{name} is not a system program")
        entry = self.table.get(base)
        special = entry.special
        if special and base in BLOCKED_BUILTINS:
            out.add("deny", f"blocklist.builtin.{base}", f"blocked: {BLOCKED_BUILTINS[base]}")
            return
        if special and base in self.blocked:
            out.add("deny", f"blocklist.command.{base}", f"blocked command {base}")
        args = argv[1:]
        if base in ctx.functions:
            if not self._is_program(base):
                return
            out.add("ask", "function.shadows-program",
                    f"a function named {base} shadows the program; judged as both")
        if special and self._special(base, args, ctx):
            return
        vopts = entry.vopts
        mdl = programs.model(base, args) if entry.modeled else None
        spec_ok = ctx.sandboxed or (mdl is not None and not mdl.unknown)
        allowed, trusted_only, unmodeled, sc = self._rules(base, args, entry.candidates,
                                                           vopts, ctx, spec_ok)
        since = ctx.mark()  # the writes from here on are this command's own
        ctx.mine = since
        if mdl is not None:
            if mdl.transfer is not None:
                ctx.globs_moved()
            self._apply_model(mdl, ctx)
            if base in renames.PROGRAMS:
                self._renames(base, args, mdl, ctx)
        elif entry.has_paths:
            spec_scan = entry.spec_scan
            if spec_scan and sc is None:
                sc = scan(args, vopts)
            pa = path_args(base, args, sc if spec_scan else None)
            for r in pa.reads:
                self._path(r, "read", ctx)
            for w in pa.writes:
                self._path(w, "write", ctx, made="file" if base in FILE_MAKERS else None)
        if base == "git":
            self._git_objects(args, ctx)
            self._git_hooks(args, ctx)
        if ctx.only_rule is not None:
            return
        if "/" not in name:
            self._program_lookup(base, ctx, pins=allowed)
        if unmodeled:
            what = "; ".join(mdl.unknown[:3]) if mdl else f"{base} has no argument spec"
            out.add("ask", "spec.unmodeled", f"not modelled by the argument spec: {what}")
        if entry.conditioned and DYN in args:
            out.add("ask", "command.dynamic-argument",
                    f"an argument of {base} is not known before running")
        if not allowed:
            out.add(self.settings.default, "default", f"no rule allows {base}")
        elif cap_allow:
            pass
        elif trusted_only and ctx.trust != "trusted" and (
                not ctx.sandboxed or ctx.trust == "untrusted"):
            out.add("ask", "trust.workspace-code", f"{base} runs workspace code; the workspace "
                    "is not trusted")
        elif entry.outside_overlay:
            out.add("ask", "overlay.allowed-commands",
                    f"{base} is not in the plugins' allowed commands")
        if mdl is not None:
            self._model_effects(mdl, ctx, since)
        for finding in gitobjects.command_findings(base, args, mdl, ctx):  # git's objects
            out.add(*finding)

    def _landed(self, lands: list[tuple[str, str, bool, bool]], ctx: _Ctx, since: int,
                symbolic: bool = False) -> None:
        """What a recursive copy or a move brings under its destination, looked at now
        (bounded): a source lands at DEST/its name when DEST is a directory, else at DEST;
        both are judged, since another command of the line can make or remove DEST. The
        source tree is listed as it is now, which the line's rewrite check keeps honest
        (`rely_tree`: another command that writes there, below it or over a directory above
        it); its names feed that check too (an ignore file, a toolchain pin), a `HEAD` among
        them asks as a HEAD write does, and each landed path is judged as a write: in full
        when it is top-level, has a name git obeys or a path pattern may name it, else for
        what git runs (hookdirs: a hooks directory, a hook's link target, a config
        include)."""
        for source, dest, into, tree in lands:
            name = pathtext.basename(source.rstrip("/"))  # as written: `src/.` is its files
            named = into and name not in ("", ".", "..")
            for cwd in ctx.cwds:
                top, base = _physical(source, cwd), _physical(dest, cwd)
                prefixes = [base]
                if named and (pathtext.isdir(base) or not pathtext.lexists(base)):
                    prefixes.append(pathtext.join(base, name))
                    # a tree that is no link now lands as one (not a link to go through)
                    made = ("link" if symbolic else None) if not tree else "tree" if \
                        _no_links([top], [cwd]) else None  # (no tree: ln's link into DIR)
                    self._path(prefixes[1], "write", ctx, entry="entry", made=made)
                elif named:  # not a directory now: it lands at DEST unless the line makes one
                    ctx.rely_tree(base, f"{dest} is not a directory now", since)
                if not tree:
                    continue
                ctx.rely_tree(top, f"{source} is copied or moved as it is now", since)
                names = treescan.tree_names(top, treescan.SCAN_LIMIT)
                if names is None:
                    continue  # not a directory now: nothing lands below it
                if names.over:
                    ctx.wrote_anything()
                    ctx.out.add("ask", "path.tree-too-big", f"{source} is too big to list what "
                                "it brings under the destination")
                    continue
                for prefix in prefixes:
                    self._landed_tree(source, prefix, names, ctx)

    def _landed_tree(self, source: str, prefix: str, names: treescan.TreeNames,
                     ctx: _Ctx) -> None:
        paths = names.paths
        if sum("/" not in rel for rel in paths) > MAX_LANDED_TOP:
            ctx.out.add("ask", "path.tree-too-big", f"{source} holds more than "
                        f"{MAX_LANDED_TOP} entries at its top, each judged where it lands")
            return
        real_prefix: str | None = None
        for k, rel in enumerate(paths):
            if not k & 63:
                budget_mod.check()
            leaf = rel.rpartition("/")[2]
            ctx.wrote_name(leaf)
            if leaf == "HEAD":
                ctx.out.add("ask", "path.git-head", f"{source} holds {rel}: a file named HEAD, "
                            "with objects/ and refs/ beside it, makes its directory a git "
                            "directory, whose config git obeys")
            landed = pathtext.join(prefix, rel)
            linked = rel in names.links
            if "/" not in rel or leaf in gitdirs.CODE_FILES or leaf in gitdirs.CODE_DIRS or \
                    ctx.paths.write_filter.may_match(landed, ctx.roots):
                self._path(landed, "write", ctx, entry="made" if linked else None,
                           made=None if linked else "tree")
                continue
            if real_prefix is None:
                real_prefix = resolve(prefix)
            # a link lands as an entry made there (or, copied with -L, as a tree the
            # listing did not enter): a directory above a hook's place swaps it
            hit = hooks_write(landed, pathtext.join(real_prefix, rel), landed, ctx.roots,
                              entry=linked)
            if hit is not None:
                ctx.out.add(*hit)

    def _special(self, base: str, args: list[str], ctx: _Ctx) -> bool:
        """Shells, network programs, cd: their own findings; True when judged in full."""
        out = ctx.out
        if base in SHELLS:
            if args:
                self._path(args[0], "read", ctx)
                self._workspace_script(f"{base} {args[0]}", ctx, args[0])
            return True
        if base in self.network and not self.settings.allow_network:
            out.add("deny", "network", f"{base} reaches the network (allow_network = false); "
                    "use the fetch tool")
        if base == "cd" or base == "pushd":
            operands, physical = cd_operands(args) if base == "cd" else (args, False)
            target = operands[0] if operands else ctx.home
            if target == "-":  # OLDPWD: inherited, or set by a cd the judge may not see
                out.add("ask", "path.dynamic", f"{base} - goes to OLDPWD, which is not known "
                        "before running: the paths after it could be anywhere")
            if DYN not in target and target != "-":
                new = cd_destination(ctx.cwd, target, physical)
                if new not in ctx.cwds:
                    ctx.cwds.append(new)
            if not operands:
                self._path(ctx.home, "read", ctx)
        return False

    def _renames(self, base: str, args: list[str], mdl: programs.Model, ctx: _Ctx) -> None:
        """A rename or backup that exposes a deny_read file under another name is judged as
        a read of it (renames.py); a directory is scanned when unsandboxed."""
        if ctx.only_rule is not None:
            return
        sources = [d for d, _ in mdl.deletes] if base == "mv" else list(mdl.reads)
        dests = [*mdl.dests, *mdl.writes, *(e for e in mdl.entries if e not in sources)]
        paths = renames.exposed(base, args, sources, dests)
        for path in paths:  # the entry: renaming a link exposes no more than the link
            self._path(path, "read", ctx, entry="entry")
        if paths and not ctx.sandboxed and ctx.out.verdict == "allow":
            for finding in effects.tree_findings(paths, ctx.cwds, ctx.paths, True):
                ctx.out.add(*finding)

    def _program_lookup(self, name: str, ctx: _Ctx, *, pins: bool = False) -> None:
        """Workspace code reached through a program's name (rtfixc): a PATH entry the line
        can write (pathlookup), a toolchain pin a version manager obeys (toolpins). Judged
        like a build: nothing to say when trusted or sandboxed."""
        if ctx.trust == "trusted" or (ctx.sandboxed and ctx.trust != "untrusted"):
            return
        reason = shadow_finding(name, ctx.paths)
        if reason is not None:
            ctx.out.add("ask", "path.program-lookup", reason)
        if pins and name in PINNED:
            ctx.rely(PINNED[name], f"a toolchain pin there makes {name} run what it names")
            reason = pin_finding(name, ctx.cwds or [ctx.cwd], ctx.roots)
            if reason is not None:
                ctx.out.add("ask", "version.toolchain-pin", reason)

    def _is_program(self, name: str) -> bool:
        return (name in self.command_names or programs.known(name) or name in WRAPPERS
                or name in SHELLS or name in BLOCKED_BUILTINS
                or shutil.which(name) is not None)

    def _apply_model(self, mdl: programs.Model, ctx: _Ctx) -> None:
        """Paths and findings of a modelled command."""
        out = ctx.out
        for verdict, rule_id, reason in mdl.findings:
            out.add(verdict, rule_id, reason)
        # A link's target is exposed both ways: a later write through the link lands on it,
        # and a later read (`ln -s secrets s && cat s/k`) reads it.
        links = _links(mdl, ctx)
        for r in (*mdl.reads, *links):
            self._path(r, "read", ctx)
        made = "dir" if mdl.program == "mkdir" else "file" if mdl.program in FILE_MAKERS \
            and not (mdl.lands or mdl.links or mdl.trees or mdl.keeps_links) else None
        moved = [s for s, _ in mdl.deletes] if mdl.moves_to is not None else mdl.trees
        if made is None and moved and not mdl.links and _no_links(moved, ctx.cwds):
            made = "tree"  # copies or moves of what is no link now: no link where they land
        for w in mdl.writes:
            self._path(w, "write", ctx, made=made)
        for w in links:  # judged as a write place; the command itself writes nothing there
            self._path(w, "write", ctx, made="exposed")
        deleted = {d for d, _ in mdl.deletes}
        # ln -s: where the new link points was judged (from its directory); a hard link of
        # a symbolic link is that link, read from another directory: an entry like a rename
        linked = "link" if mdl.transfer == "symlink" else None
        for e in mdl.entries:  # rm lnk, mv lnk x: the link itself, not its target
            gone = e in deleted
            self._path(e, "write", ctx, entry="entry" if gone else "made",
                       made="gone" if gone else linked)
        for d in mdl.dests:  # mv a lnk: replaced, or written into when a directory
            self._path(d, "write", ctx, entry="dest", made=linked or made)
        if mdl.detach and not ctx.sandboxed and ctx.only_rule is None:
            for reason in mdl.detach:
                out.add("ask", "escape.detach", reason)

    def _model_effects(self, mdl: programs.Model, ctx: _Ctx, since: int) -> None:
        """File-system effects of a modelled command, looked at on disk (bounded). Deleting
        HOME or an ancestor is always checked (deny); the checks that can only ask are skipped
        once the line is at least ask anyway (they would change no verdict)."""
        out = ctx.out
        found: list[effects.Finding] = []
        if mdl.deletes:
            found += effects.deletion_findings(mdl.deletes, ctx.cwds, ctx.home, ctx.roots,
                                               self.settings.max_delete_files,
                                               count=out.verdict == "allow")
        if out.verdict != "allow":
            for verdict, rule_id, reason in found:
                out.add(verdict, rule_id, reason)
            return
        if mdl.moves_to is not None:
            found += effects.move_out_findings((d for d, _ in mdl.deletes), mdl.moves_to,
                                               ctx.cwds, ctx.roots,
                                               dest_entry=mdl.moves_to in mdl.entries)
        if mdl.trees and (not mdl.hidden or mdl.gitignore) and not ctx.sandboxed:
            ctx.rely(treescan.IGNORE_FILES, f"{mdl.program} leaves out what ignore files "
                     "and hidden names hide; a changed ignore file can bring a denied one back")
        if mdl.trees:  # the sandbox masks denied names, not a hard link's other name
            found += effects.tree_findings(
                mdl.trees, ctx.cwds, ctx.paths, mdl.hidden, mdl.gitignore,
                treescan.name_filter(mdl.include, mdl.exclude, mdl.exclude_dirs),
                links_only=ctx.sandboxed)
        links = _links(mdl, ctx)
        if links and not ctx.sandboxed:  # a link to a tree exposes all of it, hidden too
            found += effects.tree_findings(links, ctx.cwds, ctx.paths, True)
        if mdl.copies:
            found += effects.copy_findings(mdl.copies, ctx.cwds, self.settings.max_delete_files)
        if mdl.lands:
            self._landed(mdl.lands, ctx, since, mdl.transfer == "symlink")
        if mdl.program == "git" and (mdl.git_dirs or ctx.cwds != [ctx.cwd] or (
                ctx.cwd != ctx.given_roots[0] and ctx.cwd != ctx.roots[0])):
            for d in mdl.git_dirs:
                self._path(d, "read", ctx)
            found += effects.git_repository_findings(mdl.git_dirs, ctx.cwds, ctx.roots)
        for verdict, rule_id, reason in found:
            out.add(verdict, rule_id, reason)

    def _git_objects(self, args: list[str], ctx: _Ctx) -> None:
        """Reads of deny_read files through git's object store and index (gitleak hook:
        `programs/git_history`); `REV:PATH` is judged like a read of PATH."""
        if ctx.only_rule is not None:
            return
        from acpd.policy.programs.git_history import git_content

        found = git_content(args, ctx.cwds, ctx.paths)
        for path in found.reads:
            self._path(path, "read", ctx)
        for finding in found.findings:
            ctx.out.add(*finding)

    def _git_hooks(self, args: list[str], ctx: _Ctx) -> None:
        """A git command that would run an existing hook runs workspace code (githooks.py):
        allowed like a build, only when trusted or sandboxed."""
        if ctx.only_rule is not None or ctx.trust == "trusted" or (
                ctx.sandboxed and ctx.trust != "untrusted"):
            return
        from acpd.policy.checks import git_subcommand
        from acpd.policy.githooks import hooks_of, hooks_that_run

        sub, rest, dirs = git_subcommand(args)
        if sub is None or DYN in sub or any(DYN in d for d in dirs):
            return
        in_tree: list[str] = []
        for cwd in ctx.cwds or [ctx.cwd]:
            where = cwd
            for d in dirs:
                where = pathtext.normpath(pathtext.join(where, d))
            reason = hooks_that_run(sub, rest, where, ctx.home, in_tree)
            if reason is not None:
                ctx.out.add("ask", "git.hooks", reason)
                return
        if in_tree:  # a checkout on the line can bring hooks the disk does not hold yet
            ctx.rely(sorted(hooks_of(sub, rest)), f"git {sub} runs the hooks in {in_tree[0]} "
                     "that are there when it runs")

    def _workspace_script(self, what: str, ctx: _Ctx, path: str | None = None) -> None:
        if ctx.only_rule is not None:
            return
        if path is not None:
            check = CHECKS["script-in-workspace"]
            if not check("sh", [path], CheckContext(ctx.cwd, ctx.roots)):
                ctx.out.add("ask", "workspace.script", f"{what}: script outside the workspace")
                return
        if ctx.trust == "trusted" or (ctx.sandboxed and ctx.trust != "untrusted"):
            ctx.out.add("allow", "workspace.script", "")
        else:
            ctx.out.add("ask", "workspace.script",
                        f"{what} runs a workspace script; the workspace is not trusted")

    def _rules(self, base: str, args: list[str], candidates: tuple[CompiledRule, ...],
               vopts: frozenset[str], ctx: _Ctx,
               spec_ok: bool) -> tuple[bool, bool, bool, Scan | None]:
        """Apply every rule of `candidates` (those naming `base`) that matches; return (some
        allow matched, that allow is trusted-only, an allow `modeled = true` did not apply
        because the spec does not model the argv, the scan of the arguments when a rule
        needed one)."""
        if ctx.only_rule is not None:
            candidates = tuple(cr for cr in candidates if cr is ctx.only_rule)
        allowed = False
        trusted_only = True
        unmodeled = False
        sc: Scan | None = None
        if not candidates and not self.glob_rules:
            return False, False, False, None
        for cr in candidates:
            if not cr.unconditional:  # (an unconditional rule has no head and no option)
                if sc is None:  # only rules with conditions look at the arguments
                    sc = scan(args, vopts)
                if cr.heads is not None and (sc.positionals[0] if sc.positionals else None) \
                        not in cr.heads:
                    continue  # no subcommand of the rule can match
                if cr.needs_options and not sc.options:
                    continue  # (with no option scanned, the global prefix has none either)
                if cr.check is not None and ctx.cctx is None:
                    ctx.cctx = CheckContext(ctx.cwd, ctx.roots)
                if not rule_matches(cr, base, args, sc, ctx.cctx, vopts):
                    continue
            if cr.verdict == "allow" and cr.modeled and not spec_ok:
                unmodeled = True
                continue
            if cr.verdict == "allow":
                ctx.out.add("allow", cr.id, "")
                allowed = True
                trusted_only = trusted_only and cr.trusted_only
            else:
                ctx.out.add(cr.verdict, cr.id, cr.reason)
        if ctx.only_rule is None and self.glob_rules:
            text = " ".join("?" if a == DYN else a for a in [base, *args]).lower()
            for regex, grule in self.glob_rules:
                if regex.match(text):
                    label = f"permissions.bash:{grule.pattern}"
                    if grule.action == "allow":
                        allowed = True
                        trusted_only = False
                        ctx.out.add("allow", label, "")
                    else:
                        ctx.out.add(grule.action, label,
                                    f"{base} matches {grule.action} pattern {grule.pattern!r}")
        return allowed, (trusted_only and allowed), unmodeled and not allowed, sc


def _links(mdl: programs.Model, ctx: _Ctx) -> list[str]:
    """Link targets of a modelled command: those made inside a destination directory count
    only when the destination is one now (`ln -s a lnk` with lnk -> a file replaces lnk)."""
    if not mdl.link_dirs:
        return mdl.links
    return [*mdl.links, *(t for d, t in mdl.link_dirs
                          if any(pathtext.isdir(pathtext.join(c, d)) for c in ctx.cwds))]


def _physical(raw: str, cwd: str) -> str:
    """Where `raw` is from `cwd`, a `..` taken through the links before it (`physical`)."""
    path = effects.absolute(raw, cwd)
    return physical(raw if raw.startswith("/") else f"{cwd}/{raw}") \
        if has_parent_step(raw) else path


def _no_links(paths: list[str], cwds: list[str]) -> bool:
    """Is none of `paths` (from any of `cwds`) a symbolic link now? (One the line makes
    there is a write over a copied source: the source's rely_tree asks.)"""
    for raw in paths:
        if any(c in raw for c in "*?[") or DYN in raw:
            return False
        for cwd in cwds:
            path = raw if raw.startswith("/") else pathtext.join(cwd, raw)
            if pathtext.islink(path.rstrip("/") or "/"):
                return False
    return True
