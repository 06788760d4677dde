"""The argument-spec model: what a program's options and positionals mean.

A `Program` is an option table (short and long options, which take a value, what each value
is) and a positional model. `parse_argv` reads an argv the way getopt_long does: `--` ends the
options, short options cluster (`-rf`), a value may be attached (`-n5`, `--lines=5`) or the
next word (`-n 5`, `--lines 5`), options may follow positionals (GNU permutation, unless the
program says otherwise), and an abbreviated long option (`--outp`) is normalised to the one
option of the table it is a prefix of. Anything the table does not know (an unknown option, an
ambiguous prefix, a missing value) is recorded in `Model.unknown`: the engine then asks unless
the command runs sandboxed.

Roles of option values: `read` (a path read), `write` (a path written), `wdir` (a directory
written into), `list` (a file naming further paths: unknown reads), `code` (a program text or
file the spec cannot see into), `pattern` (the pattern was given by option, so the first
positional is a path), `recursive`, `hidden` (reads hidden and ignored files), `ask:REASON`,
`deny:REASON`. An option may have several roles separated by `,`.

A program's `check` sees the parsed options and positionals and adds what its positional model
cannot say (sed scripts, awk programs, find expressions, git subcommands).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from acpd.policy.decision import Verdict
from acpd.policy.words import DYN


@dataclass(frozen=True, slots=True)
class Opt:
    name: str
    """Canonical name: the long form when there is one (`--output`), else `-o`."""
    takes: int = 0
    """0: no value; 1: a value (attached or the next word); 2: optional (attached only);
    3: two values (jq --arg NAME VALUE)."""
    roles: tuple[str, ...] = ()


class Model:
    """What an argv does, as far as its program's spec says. (A plain slotted class: one
    is made per modelled command, on the hot path.)"""

    __slots__ = ("copies", "deletes", "dests", "detach", "entries", "exclude", "exclude_dirs",
                 "findings", "git_dirs", "gitignore", "hidden", "include", "keeps_links",
                 "lands", "link_dirs", "links", "moves_to", "program", "reads", "transfer",
                 "trees", "unknown", "writes")

    def __init__(self, program: str) -> None:
        self.program: str = program
        self.keeps_links = False
        """A copy that makes a link where its source is one (`cp -P`, `-d`, `-a`): what it
        writes may be a link, not a regular file (commands.py FILE_MAKERS)."""
        self.unknown: list[str] = []
        self.transfer: str | None = None
        """"copy", "move", "link" or "symlink" (cp, mv, ln, ln -s): the operands are
        carried to the destination under their names."""
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.entries: list[str] = []
        """Paths acted on as directory entries (removed, renamed): a symbolic link among them
        is acted on itself, not what it points to (`rm lnk`, `mv lnk x`, `ln -sfn T lnk`)."""
        self.dests: list[str] = []
        """Destinations replaced as entries, or written into when they are (or point to) a
        directory (`mv a lnk`, `ln -s T lnk`)."""
        self.trees: list[str] = []
        """Directories whose files are read recursively (deny_read files among them
        matter)."""
        self.copies: list[str] = []
        """Trees copied elsewhere: a `.git` among them creates a repository (class 2)."""
        self.lands: list[tuple[str, str, bool, bool]] = []
        """(source, destination, into, tree) of a recursive copy, a move or a link: what
        lands under the destination, names the argv does not show (commands.py `_landed`);
        `into`: at DEST/its name when DEST is a directory (no -T); `tree`: a directory
        source's files land too (not for a link)."""
        self.hidden: bool = True
        """The tree reads include hidden files (rg without --hidden skips them)."""
        self.include: tuple[str, ...] = ()
        """Only files whose name matches one of these globs are read from the trees (grep
        --include, rg -g GLOB); empty: every file."""
        self.exclude: tuple[str, ...] = ()
        """Files (and, for rg, directories) whose name matches are not read."""
        self.exclude_dirs: tuple[str, ...] = ()
        self.gitignore: bool = False
        """The tool skips what .gitignore ignores (rg without -u/--no-ignore, git add
        without -f)."""
        self.deletes: list[tuple[str, bool]] = []
        """(path, recursive) removed by the command."""
        self.findings: list[tuple[Verdict, str, str]] = []
        """Verdicts the spec gives whatever the sandbox: deny system state, ask destructive
        git."""
        self.links: list[str] = []
        """Link targets (`ln -s T L`, `cp -l`): a later write through the link lands on
        them."""
        self.link_dirs: list[tuple[str, str]] = []
        """(destination, link target) of `ln -s T DEST` when the link is made inside DEST,
        which happens only when DEST is a directory: the target counts as a link then."""
        self.moves_to: str | None = None
        """mv's destination: sources moved out of the workspace leave it (a deletion
        there)."""
        self.git_dirs: list[str] = []
        """`git -C DIR`: the engine asks when DIR is not in the workspace's own
        repository."""
        self.detach: list[str] = []
        """Ways the command outlives its kill (ask unless sandboxed: a PID namespace)."""

    def ask_unknown(self, what: str) -> None:
        self.unknown.append(f"{self.program}: {what}")

    def ask_code(self, what: str) -> None:
        """Code the spec cannot see runs (a script file, `sed e`, `awk system()`): ask, also
        in the sandbox, which confines such code but cannot tell the user what it is. A
        program that looks read-only must not run hidden code without a human."""
        self.ask_unknown(what)
        self.add("ask", "spec.code", f"{self.program}: {what}")

    def add(self, verdict: Verdict, rule_id: str, reason: str) -> None:
        self.findings.append((verdict, rule_id, reason))


class Parsed:
    """An argv read against a program's options. (A plain class, not a dataclass: one is made
    per command judged, and a compiled dataclass still builds itself in interpreted code.)"""

    __slots__ = ("extra", "options", "positionals")

    def __init__(self, options: tuple[tuple[Opt, str | None], ...],
                 positionals: tuple[str, ...], extra: tuple[tuple[Opt, str], ...] = ()) -> None:
        self.options = options
        self.positionals = positionals
        self.extra = extra
        """The second value of three-valued options (`--arg NAME VALUE`)."""

    def has(self, *names: str) -> bool:
        return any(opt.name in names for opt, _ in self.options)

    def values(self, *names: str) -> list[str]:
        return [v for opt, v in self.options if opt.name in names and v is not None]

    def role(self, role: str) -> bool:
        return any(role in opt.roles for opt, _ in self.options)


Check = Callable[["Program", Parsed, Model], None]


@dataclass(frozen=True, slots=True)
class Program:
    name: str
    shorts: dict[str, Opt]
    longs: dict[str, Opt]
    positionals: str = "read"
    """read | write | text | none | pattern-read | copy | move | link | custom"""
    check: Check | None = None
    numeric: bool = False
    """`-5` is an option (head, tail, grep context, git log -3)."""
    permute: bool = True
    """Options may follow positionals (GNU); False: the first positional ends the options."""
    abbrev: bool = True
    """Long options accept unambiguous prefixes (getopt_long, git)."""
    raw: bool = False
    """No option parsing at all: every word is text (echo)."""
    single_dash_long: bool = False

    def long(self, word: str) -> Opt | str | None:
        """The option `--word` names: an Opt, None (unknown) or "ambiguous"."""
        opt = self.longs.get(word)
        if opt is not None or not self.abbrev:
            return opt
        hits = {o.name: o for name, o in self.longs.items() if name.startswith(word)}
        if len(hits) == 1:
            return next(iter(hits.values()))
        return "ambiguous" if hits else None


CODE_LONGS: Final = frozenset({
    "file", "exec", "exec-batch", "load", "include", "source", "pre", "to-command",
    "use-compress-program", "compress-program", "checkpoint-action", "info-script",
    "new-volume-script", "rsh-command", "upload-pack", "receive-pack", "exec-path", "eval",
    "command", "run", "script", "pager", "editor", "filter",
})
"""Long option names (on any program) that run code: a word that an unknown or ambiguous
spelling could stand for (`awk --fi=prog.awk`, a prefix GNU awk may take) asks even in the
sandbox, as the option itself would."""


def _may_name_code(prog: Program, word: str) -> bool:
    if not word:
        return False
    names = {name for name in prog.longs if name.startswith(word)} or {word}
    return any(n in CODE_LONGS or any(c.startswith(word) for c in CODE_LONGS) for n in names)


def program(name: str, short: str = "", long: str = "", roles: dict[str, str] | None = None,
            **kw: object) -> Program:
    """Build a Program from getopt-like text.

    `short`: letters; `x:` takes a value, `x::` an optional attached value. `long`: words,
    `word=` takes a value, `word[=]` an optional one, `word==` two values; `-x/word` ties a
    short letter to a long name (same option). `roles`: "-o/--output" -> "write".
    """
    roles = roles or {}
    role_of: dict[str, tuple[str, ...]] = {}
    for keys, value in roles.items():
        for key in keys.split("/"):
            role_of[key] = tuple(value.split(","))
    shorts: dict[str, Opt] = {}
    longs: dict[str, Opt] = {}
    i = 0
    while i < len(short):
        letter = short[i]
        takes = 0
        if short[i + 1 : i + 3] == "::":
            takes, i = 2, i + 3
        elif short[i + 1 : i + 2] == ":":
            takes, i = 1, i + 2
        else:
            i += 1
        shorts[letter] = Opt("-" + letter, takes, role_of.get("-" + letter, ()))
    for item in long.split():
        tie, _, word = item.rpartition("/")
        takes = 0
        if word.endswith("=="):
            word, takes = word[:-2], 3
        elif word.endswith("[=]"):
            word, takes = word[:-3], 2
        elif word.endswith("="):
            word, takes = word[:-1], 1
        opt = Opt("--" + word, takes, role_of.get("--" + word, ()) or role_of.get(tie, ()))
        longs[word] = opt
        if tie:
            shorts[tie.lstrip("-")] = opt
    return Program(name, shorts, longs, **kw)  # type: ignore[arg-type]


def parse_argv(prog: Program, args: list[str], model: Model) -> Parsed:
    """Read `args` as `prog` would; unknown forms go to `model.unknown`."""
    if prog.raw:
        return Parsed((), tuple(args))
    opts: list[tuple[Opt, str | None]] = []
    extra: list[tuple[Opt, str]] = []
    pos: list[str] = []
    i, n = 0, len(args)
    while i < n:
        arg = args[i]
        i += 1
        if arg == DYN:
            if pos or not prog.permute:
                pos.append(arg)
            else:
                model.ask_unknown("an argument is not known before running")
                pos.append(arg)
            continue
        if arg[:1] != "-" or arg == "-" or (pos and not prog.permute):
            pos.append(arg)
            if not prog.permute:
                pos.extend(args[i:])
                break
            continue
        if arg == "--":
            pos.extend(args[i:])
            break
        if prog.numeric and arg[1:].isdigit():
            continue
        if arg.startswith("--") or (prog.single_dash_long and len(arg) > 2):
            word, eq, value = arg[2 if arg.startswith("--") else 1 :].partition("=")
            found = prog.long(word)
            if not isinstance(found, Opt):  # (not `== "ambiguous"`: Opt's __eq__ is interpreted)
                what = f"option {arg.partition('=')[0]} is {'ambiguous' if found else 'not known'}"
                if _may_name_code(prog, word):
                    model.ask_code(f"{what}, and may be {prog.name}'s way to run code")
                else:
                    model.ask_unknown(what)
                continue
            if found.takes == 0 and eq:
                model.ask_unknown(f"option {found.name} takes no value")
                continue
            if found.takes in (1, 3) and not eq:
                if i >= n:
                    model.ask_unknown(f"option {found.name} lacks its value")
                    continue
                value, i = args[i], i + 1
            if found.takes == 3:
                if i >= n:
                    model.ask_unknown(f"option {found.name} lacks its value")
                    continue
                extra.append((found, args[i]))
                i += 1
            opts.append((found, value if (eq or found.takes in (1, 3)) else None))
            continue
        k = 1
        while k < len(arg):
            opt = prog.shorts.get(arg[k])
            if opt is None:
                model.ask_unknown(f"option -{arg[k]} is not known")
                break
            rest = arg[k + 1 :]
            if opt.takes == 0:
                opts.append((opt, None))
                k += 1
                continue
            if opt.takes == 2:
                opts.append((opt, rest or None))
            elif rest:
                opts.append((opt, rest))
            elif i < n:
                opts.append((opt, args[i]))
                i += 1
            else:
                model.ask_unknown(f"option -{arg[k]} lacks its value")
            break
    return Parsed(tuple(opts), tuple(pos), tuple(extra))


def apply_roles(parsed: Parsed, model: Model) -> None:
    """Option values with a path role become reads/writes; ask/deny roles become findings."""
    for opt, value in parsed.options:
        for role in opt.roles:
            if role == "read" and value is not None:
                model.reads.append(value)
            elif role in ("write", "wdir") and value is not None:
                model.writes.append(value)
            elif role == "list":
                model.ask_unknown(f"{opt.name} names files the spec cannot see")
                if value is not None:
                    model.reads.append(value)
            elif role == "code":
                model.ask_code(f"{opt.name} runs a program the spec cannot see")
                if value is not None:
                    model.reads.append(value)
            elif role.startswith("ask:"):
                model.add("ask", f"spec.{model.program}", f"{model.program} {opt.name}: "
                          + role[4:])
            elif role.startswith("deny:"):
                model.add("deny", f"spec.{model.program}", f"{model.program} {opt.name}: "
                          + role[5:])
            elif role == "unknown":
                model.ask_unknown(f"{opt.name} is outside what the spec models")
    for opt, value in parsed.extra:
        if "read2" in opt.roles:
            model.reads.append(value)
