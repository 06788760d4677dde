"""`model(name, args)`: what an argv reads, writes and deletes, and whether the program's
spec knows every option and argument of it (`Model.unknown` empty); None for a program
without a spec. Re-exported by the package (`acpd.policy.programs`), whose `__init__` stays
a thin shell so that this module can be compiled with the rest of the judge (_native.py)."""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from acpd.policy import pathtext
from acpd.policy.programs import scripts as _scripts
from acpd.policy.programs.coreutils import TABLE
from acpd.policy.programs.git import model_git
from acpd.policy.programs.spec import Model, Parsed, Program, apply_roles, parse_argv, program

__all__ = ["Model", "known", "model", "names"]

_DOCKER_GLOBAL: Final = program("docker", "Dl:", "debug log-level=", permute=False)
_DOCKER: Final = {
    "ps": program("ps", "af:n:lqs", "all filter= format= last= latest no-trunc quiet size",
                  positionals="none"),
    "images": program("images", "af:q", "all digests filter= format= no-trunc quiet tree",
                      positionals="text"),
    "version": program("version", "f:", "format=", positionals="none"),
    "info": program("info", "f:", "format=", positionals="none"),
}


def _docker(args: list[str], m: Model) -> None:
    glob = parse_argv(_DOCKER_GLOBAL, args, m)
    if not glob.positionals:
        m.ask_unknown("no subcommand")
        return
    sub = _DOCKER.get(glob.positionals[0])
    if sub is None:
        m.ask_unknown(f"subcommand {glob.positionals[0]!r} is outside what the spec models")
        return
    _positionals(sub, parse_argv(sub, list(glob.positionals[1:]), m), m)


def known(name: str) -> bool:
    return name in TABLE or name in ("git", "docker", "podman")


def names() -> tuple[str, ...]:
    """Every program name with a spec."""
    return (*TABLE, "git", "docker", "podman")


def model(name: str, args: list[str]) -> Model | None:
    """The model of `name args...`, or None when no spec covers `name`. A pure function of
    its arguments (no file-system fact), so it is memoised; the result must not be changed."""
    return _model(name, tuple(args))


@lru_cache(maxsize=2048)
def _model(name: str, argv: tuple[str, ...]) -> Model | None:
    args = list(argv)
    m = Model(name)
    if name == "git":
        model_git(args, m)
        return m
    if name in ("docker", "podman"):
        _docker(args, m)
        return m
    prog = TABLE.get(name)
    if prog is None:
        return None
    if name == "tar":
        args = _scripts._tar_oldstyle(args)
    parsed = parse_argv(prog, args, m)
    apply_roles(parsed, m)
    if prog.check is not None:
        prog.check(prog, parsed, m)
    else:
        _positionals(prog, parsed, m)
    if name == "disown":
        m.detach.append("disown keeps jobs running after the command")
    return m


def _positionals(prog: Program, parsed: Parsed, m: Model) -> None:
    kind = prog.positionals
    if kind == "text" or kind == "custom":
        return  # nothing to say about the operands (and nothing to compute)
    pos = [p for p in parsed.positionals if p != "-"]
    recursive = bool(parsed.options) and (parsed.role("recursive") or any(
        "recurse".startswith(v) and v for v in parsed.values("-d", "--directories")))
    if kind == "read":
        m.reads.extend(pos)
        if recursive:
            m.trees.extend(pos or ["."])
    elif kind == "write":
        m.writes.extend(pos)
    elif kind == "delete":  # rm, unlink, rmdir remove the entry (a link, not its target)
        m.entries.extend(pos)
        m.deletes.extend((p, recursive) for p in pos)
    elif kind == "none":
        if pos:
            m.ask_unknown(f"argument {pos[0]!r} is outside what the spec models")
    elif kind == "pattern-read":
        if not parsed.role("pattern"):
            pos = pos[1:]
        m.reads.extend(pos)
        if recursive or prog.name == "rg":
            m.trees.extend(pos or ["."])
            m.hidden = prog.name != "rg" or parsed.role("hidden")
            m.gitignore = not m.hidden
            _name_filters(prog.name, parsed, m)
    elif kind == "in-out":
        m.reads.extend(pos[:1])
        m.writes.extend(pos[1:2])
        if len(pos) > 2:
            m.ask_unknown("more than two operands")
    elif kind in ("copy", "move", "link"):
        _transfer(kind, parsed, pos, recursive, m)


def _transfer(kind: str, parsed: Parsed, pos: list[str], recursive: bool, m: Model) -> None:
    """cp / mv / ln: sources, and a destination that may be a directory."""
    m.transfer = "symlink" if kind == "link" and parsed.has("-s", "--symbolic") else kind
    targets = [v for opt, v in parsed.options if "wdir" in opt.roles and v is not None]
    # mv and ln replace a destination that is not a directory as an entry (a link there is
    # replaced, not written through); -T / -n say so even for a directory.
    no_target_dir = parsed.has("--no-target-directory", "-T")  # DEST itself, never DEST/name
    as_entry = kind in ("move", "link") and (no_target_dir or parsed.has(
        "--no-dereference", "-n"))
    dests = m.entries if as_entry else m.dests if kind in ("move", "link") else m.writes
    if targets:
        sources, dest = pos, targets[-1]
    elif kind == "link" and len(pos) == 1:
        sources, dest = pos, pathtext.basename(pos[0].rstrip("/")) or "."
        dests.append(dest)
    elif len(pos) >= 2:
        sources, dest = pos[:-1], pos[-1]
        dests.append(dest)
    else:
        m.ask_unknown("no destination")
        return
    _backups(parsed, sources, dest, m, recursive and kind == "copy")
    if kind == "copy":
        m.keeps_links = parsed.has("-P", "--no-dereference", "-d", "-a", "--archive", "-s",
                                   "--symbolic-link") or recursive
        # A destination directory: each source lands at DIR/its name, which the path policy
        # judges too (`cp -t secrets x` writes secrets/x, which deny_read may name). cp writes
        # through a link, so a destination that is a link to a file is judged the same way.
        dests.extend(_landed_names(sources, dest))
    elif kind == "link" and not as_entry:
        # ln into a directory makes DIR/its name, a new entry (`ln -t gd x/config` makes
        # gd/config): judged on disk (commands.py `_landed`), not the link's target tree.
        m.lands.extend((s, dest, True, False) for s in sources)
    if kind == "move":
        # What lands under DEST (DEST/its name when DEST is a directory, and a moved tree's
        # files) is looked at on disk (commands.py `_landed`).
        m.lands.extend((s, dest, not as_entry, True) for s in sources)
        m.entries.extend(sources)
        m.deletes.extend((s, False) for s in sources)  # HOME, ancestors (a rename: no count)
        m.moves_to = dest
        return
    if kind == "link" or parsed.role("link"):
        for src in sources:
            m.links.append(src)
            if parsed.has("--symbolic", "-s") and not src.startswith("/"):
                # relative to the link's directory: the one holding the destination, or the
                # destination itself when the link is made inside it (a directory, no -n/-T)
                if pathtext.dirname(dest):
                    m.links.append(pathtext.join(pathtext.dirname(dest), src))
                if targets or not as_entry:
                    m.link_dirs.append((dest, pathtext.join(dest, src)))
        if kind == "link":
            return
    m.reads.extend(sources)
    if recursive:
        m.trees.extend(sources)
        m.copies.extend(sources)
        m.lands.extend((s, dest, not no_target_dir, True) for s in sources)


def _backups(parsed: Parsed, sources: list[str], dest: str, m: Model,
             recursive: bool) -> None:
    """`-b`/`--backup`/`-S SUFFIX`: the replaced destination is renamed to its name plus the
    suffix (`~` by default; numbered ones `.~N~`), a new entry each judged where it is made
    (`cp -b -S .inc a conf/git` makes conf/git.inc, which a config may include). A recursive
    copy backs up every file it replaces below DEST too, under names the spec does not list:
    not modelled (`cp -rb -S -commit e/. scripts` makes scripts/pre-commit of scripts/pre)."""
    suffixes = parsed.values("-S", "--suffix")
    if not suffixes and not parsed.has("-b", "--backup"):
        return
    if recursive:
        m.ask_unknown("backups of the files a recursive copy replaces (-b, -S, --suffix)")
    suffix = suffixes[-1] if suffixes else "~"
    for target in (dest, *_landed_names(sources, dest)):
        m.entries.append(target.rstrip("/") + suffix)


def _landed_names(sources: list[str], dest: str) -> list[str]:
    return [pathtext.join(dest, pathtext.basename(s.rstrip("/"))) for s in sources
            if pathtext.basename(s.rstrip("/")) not in ("", ".", "..")]


def _name_filters(name: str, parsed: Parsed, m: Model) -> None:
    """Which files of a tree the search reads, narrowed only where the tool's semantics are
    certain to match ours (else the tree is read whole).

    grep (GNU, gnulib `excluded_file_name`): the LAST --include/--exclude that matches a base
    name decides, and a name none matches is read when the FIRST such option is --exclude;
    glibc fnmatch takes `\\x` as `x` and knows `[^...]`, `[[:alpha:]]`. So: only all-include
    or all-exclude lists of plain globs narrow; --exclude-from (patterns we do not see, in
    order) stops the narrowing. --exclude-dir is a plain "any match skips".
    rg: later -g globs win, `!` negates, a file no glob matches is skipped only when some glob
    is not negated, directories are skipped only by a negated glob; globs are gitignore-style
    (`{a,b}`, `\\`, `[...]`, `**`) and a whitelist glob overrides hidden-file and .gitignore
    skipping. So with any glob the tree's hidden and ignored files count, and the globs are
    applied in rg's order (treescan.name_filter, `RG_ORDERED`)."""
    if name == "rg":
        _rg_globs(parsed, m)
        return
    if parsed.has("--exclude-from"):
        return
    kinds = [(opt.name, v) for opt, v in parsed.options
             if opt.name in ("--include", "--exclude") and v is not None]
    if all(_plain_glob(g) for _, g in kinds):
        if all(k == "--include" for k, _ in kinds):
            m.include = tuple(g for _, g in kinds)
        elif all(k == "--exclude" for k, _ in kinds):
            m.exclude = tuple(g for _, g in kinds)
    dirs = parsed.values("--exclude-dir")
    if all(_plain_glob(g) for g in dirs):
        m.exclude_dirs = tuple(dirs)


def _rg_globs(parsed: Parsed, m: Model) -> None:
    from acpd.policy.treescan import RG_ORDERED

    globs = parsed.values("-g", "--glob")
    if parsed.has("--iglob") or globs:
        m.hidden, m.gitignore = True, False  # a whitelist glob overrides both
    if parsed.has("--iglob", "--glob-case-insensitive", "--type", "--type-not", "--type-add"):
        return
    bodies = [g[1:] if g.startswith("!") else g for g in globs]
    if globs and all(_plain_glob(b, rg=True) for b in bodies):
        m.include = (RG_ORDERED, *globs)  # treescan.name_filter applies them in rg's order


def _plain_glob(glob: str, rg: bool = False) -> bool:
    """A glob Python's fnmatch reads exactly as the tool does: `*` and `?` only (no escapes,
    classes, and for rg no braces, separators or `**`)."""
    if not glob or "\\" in glob or "[" in glob:
        return False
    return not rg or (not any(c in glob for c in "{}/") and "**" not in glob)
