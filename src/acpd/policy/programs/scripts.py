"""Programs whose arguments are programs: sed scripts, awk programs, find expressions, tar
modes, and the two builtins that set system state (date, hostname).

A script form the checker cannot read to the letter is `unknown` (ask unless sandboxed); forms
that run commands are left to the deny rules (`sed.exec`, `awk.exec`, `find.exec`, `tar.exec`)
and are also unknown here, so a policy without those rules still asks.
"""

from __future__ import annotations

import re
from typing import Final

from acpd.policy import pathtext
from acpd.policy.programs.awkscan import scan_awk
from acpd.policy.programs.coreutils import TABLE, add
from acpd.policy.programs.sedparse import parse_sed
from acpd.policy.programs.spec import Model, Parsed, Program, program
from acpd.policy.words import DYN

_ARGV_ARGC: Final = re.compile(r"ARG[VC]\b")
_ASSIGNS_ARGV: Final = re.compile(r"\s*ARG[VC]\b")
_AWK_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
"""An awk operand `var=value` (assigned when awk reaches it, not a file)."""

# ---- sed ---------------------------------------------------------------------------------

def sed_chunks(parsed: Parsed) -> list[str]:
    """The script chunks of a parsed sed argv: the -e values in order, else the first
    operand (none when -f gives the script)."""
    scripts = parsed.values("--expression")
    if not scripts and not parsed.has("--file") and parsed.positionals:
        return [parsed.positionals[0]]
    return scripts


def _sed_script(chunks: list[str], model: Model) -> None:
    """Walk the commands of a GNU sed script (`sedparse`, GNU's own grammar); reads (`r`,
    `R`) are paths; anything that runs or writes (`e`, `s///e`, `s///w`, `w`, `W`) or that
    cannot be read as GNU sed reads it asks, also in the sandbox (a `w` file is opened
    while the script is read, and `.git/commondir` is writable there)."""
    if any(DYN in c for c in chunks):
        model.ask_code("the script is not known before running")
        return
    script = parse_sed(tuple(chunks))
    for cmd, arg in script.commands:
        if cmd in "rR":
            model.reads.append(arg)
        elif cmd in "wW":
            model.writes.append(arg)
            model.ask_code(f"command {cmd!r} writes {arg!r}")
        elif cmd == "e":
            model.ask_code("command 'e' runs a command")
        elif cmd == "s" and "e" in arg:
            model.ask_code(f"s flags {arg!r} run the pattern space as a command")
    if script.uncertain is not None:
        model.ask_code(f"the script cannot be read as GNU sed reads it: {script.uncertain}")


def _sed(prog: Program, parsed: Parsed, model: Model) -> None:
    chunks = sed_chunks(parsed)
    pos = list(parsed.positionals)
    if not parsed.values("--expression") and not parsed.has("--file"):
        if not pos:
            model.ask_unknown("no script")
            return
        pos.pop(0)
    _sed_script(chunks, model)
    if parsed.has("--file"):
        model.ask_code("-f runs a script file the spec cannot see")
    if parsed.has("--in-place"):
        model.writes.extend(p for p in pos if p != "-")
        for suffix in parsed.values("--in-place"):
            model.writes.extend(sed_backup(p, suffix) for p in pos if p != "-" and suffix)
    model.reads.extend(p for p in pos if p != "-")


def sed_backup(operand: str, suffix: str) -> str:
    """Where GNU sed -i puts the original (`-iSUFFIX`): each `*` of SUFFIX is the file's base
    name, else SUFFIX is appended; a result without `/` lies beside the file, one with `/` is
    a path of its own (`-i'.git/hooks/*'`, `-i'/tmp/bk_*'`)."""
    name = suffix.replace("*", pathtext.basename(operand)) if "*" in suffix \
        else pathtext.basename(operand) + suffix
    return name if "/" in name else pathtext.join(pathtext.dirname(operand), name)


SED: Final = program(
    "sed", "nErsuzf:e:l:i::",
    "quiet silent debug -e/expression= -f/file= follow-symlinks -i/in-place[=] "
    "line-length= null-data zero-terminated posix regexp-extended separate sandbox "
    "unbuffered" + " help version",
    {"-f/--file": "read"}, positionals="custom", check=_sed)
add(SED)

# ---- awk ---------------------------------------------------------------------------------

def _awk_program(text: str, model: Model) -> None:
    """`awkscan`: commands, pipes, getline, ARGV, `@` and programs it cannot read ask even
    in the sandbox; so does `print > FILE` (the sandbox lets it write `.git/commondir`)."""
    if DYN in text:
        model.ask_unknown("the program is not known before running")
        return
    facts = scan_awk(text)
    if facts.code is not None:
        model.ask_code(f"{facts.code}: it may run commands, read files or load code")
    if facts.writes:
        model.ask_code("print > FILE writes a file the spec cannot see")
    if facts.uncertain is not None:
        model.ask_code(f"the program cannot be read with certainty: {facts.uncertain}")


def _awk(prog: Program, parsed: Parsed, model: Model) -> None:
    pos = list(parsed.positionals)
    if parsed.has("--file"):
        model.ask_code("-f runs a program file the spec cannot see")
    elif pos:
        _awk_program(pos.pop(0), model)
    else:
        model.ask_unknown("no program")
    for v in parsed.values("--assign"):
        if _ASSIGNS_ARGV.match(v):
            model.ask_code(f"-v {v!r} changes the input files at run time")
    for p in pos:
        if _AWK_ASSIGNMENT.match(p):
            if _ARGV_ARGC.match(p):
                model.ask_code(f"{p!r} changes the input files at run time")
            continue  # var=value operand
        if p != "-":
            model.reads.append(p)


# `awk` is mawk on some systems and gawk on others: its table knows both's ways to load code
# (gawk -i/-l/-E/-e, mawk -W exec), so that they ask even in the sandbox instead of being
# merely unknown options there.
_AWK: Final = program("awk", "E:i:l:e:W:", "-F/field-separator= -v/assign= -f/file= include= load= "
                      "exec= source=" + " help version",
                      {"-f/--file": "read", "-E/--exec": "code", "-i/--include": "code",
                       "-l/--load": "code", "-e/--source": "code", "-W": "code"},
                      positionals="custom", check=_awk, abbrev=False)
add(_AWK, "mawk", "nawk")
add(program(
    "gawk", "bcCdDghLMNnoOpPrsStVYe:E:i:l:",
    "-F/field-separator= -v/assign= -f/file= characters-as-bytes traditional copyright "
    "dump-variables[=] debug[=] source= exec= gen-pot help include= lint[=] load= bignum "
    "use-lc-numeric non-decimal-data pretty-print[=] optimize profile[=] posix re-interval "
    "no-optimize sandbox lint-old version csv",
    {"-f/--file": "read", "-E/--exec": "code", "-i/--include": "code", "-l/--load": "code",
     "-e/--source": "code", "-d/--dump-variables": "unknown", "-o/--pretty-print": "unknown",
     "-p/--profile": "unknown", "-D/--debug": "unknown"},
    positionals="custom", check=_awk))

# ---- find --------------------------------------------------------------------------------

_FIND_VALUE: Final = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
    "-perm", "-user", "-group", "-uid", "-gid", "-links", "-inum", "-maxdepth", "-mindepth",
    "-used", "-fstype", "-context", "-regextype", "-lname", "-ilname", "-printf", "-newer",
    "-anewer", "-cnewer", "-samefile", "-files0-from",
})
_FIND_FLAG: Final = frozenset({
    "-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false", "-empty", "-readable",
    "-writable", "-executable", "-nouser", "-nogroup", "-depth", "-xdev", "-mount", "-follow",
    "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race", "-daystart", "-not", "!",
    "(", ")", "-a", "-and", "-o", "-or", ",", "-help", "--help", "-version", "--version",
    "-d", "-delete",
})
_FIND_READ: Final = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})


def _find(prog: Program, parsed: Parsed, model: Model) -> None:
    args = list(parsed.positionals)
    i = 0
    while (i < len(args) and args[i] in ("-H", "-L", "-P")) or (
            i < len(args) and args[i].startswith(("-D", "-O")) and args[i] not in _FIND_FLAG):
        if args[i] == "-D":
            i += 1
        i += 1
    starts: list[str] = []
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!", ")")):
        starts.append(args[i])
        i += 1
    delete = False
    while i < len(args):
        word = args[i]
        i += 1
        if word.startswith("-newer") and len(word) == 8:
            word = "-newer"
        if word in _FIND_VALUE:
            if i >= len(args):
                model.ask_unknown(f"{word} lacks its value")
                return
            if word in _FIND_READ:
                model.reads.append(args[i])
            if word == "-files0-from":
                model.ask_unknown("-files0-from names start points the spec cannot see")
            i += 1
        elif word == "-delete":
            delete = True
        elif word not in _FIND_FLAG:
            model.ask_unknown(f"{word} is outside what the spec models")
    starts = starts or ["."]
    model.reads.extend(starts)
    if delete:
        model.deletes.extend((s, True) for s in starts)


add(program("find", positionals="custom", check=_find, raw=True))

# ---- tar ---------------------------------------------------------------------------------

_TAR_MODES: Final = {"-c": "create", "-x": "extract", "-t": "list", "-r": "append", "-u": "update",
                     "-A": "concat", "-d": "diff", "--create": "create", "--extract": "extract",
                     "--get": "extract", "--list": "list", "--append": "append",
                     "--update": "update", "--concatenate": "concat", "--catenate": "concat",
                     "--diff": "diff", "--compare": "diff", "--delete": "delete"}


def _tar(prog: Program, parsed: Parsed, model: Model) -> None:
    modes = {_TAR_MODES[o.name] for o, _ in parsed.options if o.name in _TAR_MODES}
    if len(modes) != 1:
        model.ask_unknown("no single operation mode")
        return
    mode = modes.pop()
    archives = parsed.values("--file")
    if not parsed.has("--force-local"):
        for a in archives:
            if DYN in a:
                model.ask_unknown("the archive name is not known before running (a "
                                  "HOST:FILE name is a remote archive)")
            elif ":" in a.partition("/")[0]:
                model.add("deny", "network", f"tar archive {a!r} is remote (HOST:FILE): tar "
                          "runs rsh/ssh to reach it (allow_network = false)")
    dirs = parsed.values("--directory")
    members = [p for p in parsed.positionals]
    if mode in ("create", "append", "update"):
        model.writes.extend(a for a in archives if a != "-")
        # members are relative to a -C directory (which one depends on the order: every one)
        placed = [pathtext.join(d, m) for d in dirs for m in members] if dirs else members
        model.reads.extend(dirs)
        model.reads.extend(placed)
        model.trees.extend(placed)
        if parsed.has("--remove-files"):
            model.deletes.extend((m, True) for m in placed)
        if not members and not parsed.has("--files-from"):
            model.ask_unknown("no member names")
    elif mode == "extract":
        model.reads.extend(a for a in archives if a != "-")
        if not parsed.has("-O", "--to-stdout"):
            model.writes.extend(dirs or ["."])
            # members are judged at decision time (rules tar.extract-*: programs.archive)
            model.ask_unknown("extraction writes member paths the spec cannot see")
    elif mode in ("list", "diff"):
        model.reads.extend(a for a in archives if a != "-")
    else:
        model.writes.extend(a for a in archives if a != "-")
        model.reads.extend(members)
    if parsed.has("--absolute-names"):
        model.ask_unknown("-P keeps absolute member names")


def _tar_oldstyle(args: list[str]) -> list[str]:
    """`tar czf x.tgz dir` (letters without a dash) as `tar -c -z -f x.tgz dir`."""
    if not args or args[0].startswith("-") or args[0] == DYN:
        return args
    letters, rest = args[0], list(args[1:])
    out: list[str] = []
    for letter in letters:
        out.append("-" + letter)
        if letter in "fCbTXgKNLVH" and rest:
            out.append(rest.pop(0))
    return [*out, *rest]


TAR: Final = program(
    "tar", "AcdrtuxzjJaZvkmopPSWwhiBMOGlRsUf:C:T:X:b:H:g:K:N:L:V:I:F:",
    "create extract get list append update concatenate catenate diff compare delete "
    "-f/file= -C/directory= -T/files-from= -X/exclude-from= -P/absolute-names "
    "-g/listed-incremental= -I/use-compress-program= -F/info-script= exclude= exclude-vcs "
    "exclude-vcs-ignores "
    "exclude-caches exclude-backups gzip gunzip ungzip bzip2 xz lzma lzip lzop zstd "
    "compress uncompress auto-compress verbose keep-old-files skip-old-files "
    "keep-newer-files overwrite overwrite-dir no-overwrite-dir touch preserve-permissions "
    "same-permissions no-same-permissions same-owner no-same-owner numeric-owner "
    "owner= group= mode= mtime= sort= format= transform= xform= strip-components= "
    "dereference hard-dereference one-file-system anchored no-anchored "
    "wildcards no-wildcards wildcards-match-slash ignore-case no-ignore-case null no-null "
    "recursion no-recursion totals[=] show-transformed-names checkpoint[=] "
    "checkpoint-action= to-command= use-compress-program= info-script= new-volume-script= "
    "rsh-command= rmt-command= remove-files blocking-factor= record-size= label= "
    "incremental unlink-first recursive-unlink warning= sparse xattrs no-xattrs acls "
    "no-acls selinux no-selinux full-time utc force-local check-device no-check-device "
    "ignore-failed-read ignore-zeros occurrence[=] verify restrict level= posix "
    "numeric-owner quoting-style= index-file= backup[=] suffix= hole-detection= "
    "pax-option= to-stdout delay-directory-restore no-delay-directory-restore"
    + " help version usage",
    {"-T/--files-from": "list", "-X/--exclude-from": "read", "-g/--listed-incremental": "write",
     "--index-file": "write", "-N": "unknown", "-K": "unknown", "-L/-V/-M": "unknown",
     "-F/--info-script/--new-volume-script": "deny:runs a program",
     "-I/--use-compress-program": "deny:runs a program",
     "--to-command/--checkpoint-action/--rsh-command/--rmt-command": "deny:runs a command",
     "--recursive-unlink/--unlink-first": "ask:removes files before extracting",
     "--delete": "ask:rewrites an archive"},
    positionals="custom", check=_tar)
TABLE["tar"] = TAR

# ---- system state ------------------------------------------------------------------------


def _date(prog: Program, parsed: Parsed, model: Model) -> None:
    if parsed.has("--set"):
        model.add("deny", "system.state", "date --set changes the system clock")
    for p in parsed.positionals:
        if not p.startswith("+"):
            model.add("deny", "system.state", f"date {p} sets the system clock")


add(program("date", "", "-d/date= -f/file= -I/iso-8601[=] -R/rfc-email rfc-3339= "
            "-r/reference= -s/set= universal -u/utc debug resolution" + " help version",
            {"-f/--file/-r/--reference": "read"}, positionals="custom", check=_date))


def _hostname(prog: Program, parsed: Parsed, model: Model) -> None:
    if parsed.positionals or parsed.has("--file", "--boot"):
        model.add("deny", "system.state", "hostname NAME changes the host name")


add(program("hostname", "adfiIsAvy", "alias domain fqdn long ip-address all-ip-addresses "
            "short all-fqdns verbose yp nis -b/boot -F/file=" + " help version",
            positionals="custom", check=_hostname))
_ = TABLE
