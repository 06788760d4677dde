"""Argument grammar: options, positionals, and which arguments of a command are paths.

This is knowledge about commands, not policy: the policy decides what a path may be, this
module says which words *are* paths (read or written) for the commands it knows. A command it
does not know has no path arguments; such a command is not on any allowlist either, so it asks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from acpd.policy.words import DYN


class Scan:
    """An argv split into options and positionals (a plain class: made for most commands
    judged, and a compiled NamedTuple still builds itself in interpreted code)."""

    __slots__ = ("options", "positionals")

    def __init__(self, options: tuple[tuple[str, str | None], ...],
                 positionals: tuple[str, ...]) -> None:
        self.options = options
        """(name, value): `-x` for each letter of a short cluster, `--long` before any `=`."""
        self.positionals = positionals


def scan(args: list[str] | tuple[str, ...], value_options: frozenset[str]) -> Scan:
    opts: list[tuple[str, str | None]] = []
    pos: list[str] = []
    i, n = 0, len(args)
    while i < n:
        arg = args[i]
        i += 1
        if arg[:1] != "-" or arg == "-":  # a positional (DYN does not start with "-")
            pos.append(arg)
            continue
        if arg == "--":
            pos.extend(args[i:])
            break
        if arg[1] == "-":  # --long (longer than "--")
            name, eq, value = arg.partition("=")
            if not eq and name in value_options and i < n:
                value, i = args[i], i + 1
                opts.append((name, value))
            else:
                opts.append((name, value if eq else None))
        else:  # -x, a cluster -xyz, -xVALUE
            if arg in value_options:
                opts.append((arg, args[i] if i < n else None))
                i += 1
                continue
            if len(arg) > 2 and arg[:2] in value_options and arg[1].isalpha():
                opts.append((arg[:2], arg[2:]))
                continue
            for k, letter in enumerate(arg[1:], start=1):
                flag = "-" + letter
                if flag in value_options:
                    rest = arg[k + 1 :]
                    if rest:
                        opts.append((flag, rest))
                    else:
                        opts.append((flag, args[i] if i < n else None))
                        i += 1
                    break
                opts.append((flag, None))
            else:
                opts.append((arg, None))
    return Scan(tuple(opts), tuple(pos))


def option_matches(spec: str, name: str) -> bool:
    """Does an option as written (`name`) select the option `spec`?

    Long options match abbreviations (getopt_long and git accept unambiguous prefixes):
    `--for` selects `--force`. A single-dash multi-letter spec (`-exec`) must match exactly.
    """
    if spec == name:
        return True
    if spec.startswith("--") and name.startswith("--"):
        body = name[2:]
        return len(body) >= 2 and spec[2:].startswith(body)
    return False


@dataclass(frozen=True, slots=True)
class PathSpec:
    reads: str = "none"
    """none | all | after_first | first | but_last"""
    writes: str = "none"
    """none | all | last | after_first | second"""
    value_options: frozenset[str] = frozenset()
    read_options: frozenset[str] = frozenset()
    write_options: frozenset[str] = frozenset()
    pattern_options: frozenset[str] = frozenset()
    """When one of these is present the first positional is a path, not a pattern/program."""


def _fs(*items: str) -> frozenset[str]:
    return frozenset(items)


_READERS: Final = (
    "cat", "tac", "nl", "head", "tail", "less", "more", "wc", "od", "xxd", "hexdump", "strings",
    "file", "stat", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
    "b2sum", "cksum", "sum", "cut", "paste", "diff", "cmp", "comm", "du", "ls", "dir", "tree",
    "readlink", "column", "fold", "fmt", "expand", "unexpand", "rev", "iconv", "bat", "tokei",
    "cloc",
)
_READER_VALUES: Final = _fs("-n", "-c", "-d", "-f", "-b", "-I", "-w", "-t", "-s", "-U", "-L",
                            "--max-depth", "--lines", "--bytes", "--delimiter", "--fields",
                            "--ignore", "--width", "--output-delimiter", "-x", "-B", "--block-size")
_GREP_VALUES: Final = _fs("-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "-T", "-j", "-M", "-E",
                          "-d", "-D", "--regexp", "--file", "--glob", "--type", "--type-not",
                          "--max-count", "--context", "--after-context", "--before-context",
                          "--include", "--exclude", "--exclude-dir", "--color", "--colour",
                          "--max-depth", "--threads", "--encoding", "--type-add", "-r", "--replace",
                          "--sort", "--sortr", "--max-filesize", "--label")

SPECS: dict[str, PathSpec] = {}
for _name in _READERS:
    SPECS[_name] = PathSpec(reads="all", value_options=_READER_VALUES)
for _name in ("grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep"):
    SPECS[_name] = PathSpec(reads="after_first", value_options=_GREP_VALUES,
                            read_options=_fs("-f", "--file"),
                            pattern_options=_fs("-e", "-f", "--regexp", "--file"))
SPECS["sed"] = PathSpec(reads="after_first", value_options=_fs("-e", "-f", "-l", "-s",
                        "--expression", "--file", "--line-length"),
                        read_options=_fs("-f", "--file"),
                        pattern_options=_fs("-e", "-f", "--expression", "--file"))
for _name in ("awk", "gawk", "mawk", "nawk"):
    SPECS[_name] = PathSpec(reads="after_first", value_options=_fs("-v", "-F", "-f", "--assign",
                            "--field-separator", "--file"), read_options=_fs("-f", "--file"),
                            pattern_options=_fs("-f", "--file"))
for _name in ("jq", "yq", "gojq"):
    SPECS[_name] = PathSpec(reads="after_first", value_options=_fs("-f", "--from-file",
                            "--indent", "--arg", "--argjson", "--tab"),
                            read_options=_fs("-f", "--from-file", "--slurpfile", "--rawfile"),
                            pattern_options=_fs("-f", "--from-file"))
SPECS["sort"] = PathSpec(reads="all", value_options=_fs("-k", "-t", "-S", "-T", "-o",
                         "--key", "--field-separator", "--buffer-size", "--temporary-directory",
                         "--output", "--parallel", "--batch-size"),
                         write_options=_fs("-o", "--output", "-T", "--temporary-directory"))
SPECS["uniq"] = PathSpec(reads="first", writes="second", value_options=_fs("-f", "-s", "-w"))
for _name in ("cp", "install"):
    SPECS[_name] = PathSpec(reads="but_last", writes="last",
                            value_options=_fs("-S", "-t", "-m", "-o", "-g", "--suffix",
                                              "--target-directory", "--mode"),
                            write_options=_fs("-t", "--target-directory"))
SPECS["mv"] = PathSpec(writes="all", value_options=_fs("-S", "-t", "--suffix",
                       "--target-directory"), write_options=_fs("-t", "--target-directory"))
SPECS["ln"] = PathSpec(reads="but_last", writes="last", value_options=_fs("-S", "-t",
                       "--suffix", "--target-directory"),
                       write_options=_fs("-t", "--target-directory"))
for _name in ("rm", "rmdir", "shred", "unlink"):
    SPECS[_name] = PathSpec(writes="all", value_options=_fs("-n", "-s", "--iterations"))
SPECS["truncate"] = PathSpec(writes="all", value_options=_fs("-s", "-r", "--size",
                             "--reference"), read_options=_fs("-r", "--reference"))
SPECS["touch"] = PathSpec(writes="all", value_options=_fs("-d", "-t", "-r", "--date",
                          "--reference"), read_options=_fs("-r", "--reference"))
SPECS["mkdir"] = PathSpec(writes="all", value_options=_fs("-m", "--mode"))
for _name in ("chmod", "chown", "chgrp"):
    SPECS[_name] = PathSpec(writes="after_first", value_options=_fs("--reference"),
                            read_options=_fs("--reference"), pattern_options=_fs("--reference"))
SPECS["tee"] = PathSpec(writes="all", value_options=_fs("--output-error"))
SPECS["tar"] = PathSpec(reads="all", value_options=_fs("-f", "-C", "-T", "-X", "-b", "-H",
                        "--file", "--directory", "--files-from", "--exclude-from", "-I",
                        "--use-compress-program", "--exclude", "--transform", "--format"),
                        write_options=_fs("-f", "--file", "-C", "--directory"),
                        read_options=_fs("-T", "-X", "--files-from", "--exclude-from"))
for _name in ("zip",):
    SPECS[_name] = PathSpec(reads="after_first", writes="first")
SPECS["unzip"] = PathSpec(reads="first", value_options=_fs("-d", "-x"), write_options=_fs("-d"))
for _name in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "lz4"):
    SPECS[_name] = PathSpec(writes="all", value_options=_fs("-S", "--suffix", "-o"),
                            write_options=_fs("-o"))
SPECS["base64"] = PathSpec(reads="all", value_options=_fs("-w", "-o", "-i", "--wrap",
                           "--output", "--input"), write_options=_fs("-o", "--output"),
                           read_options=_fs("-i", "--input"))
SPECS["patch"] = PathSpec(writes="first", value_options=_fs("-o", "-i", "-p", "-d", "-r",
                          "--output", "--input", "--directory"),
                          write_options=_fs("-o", "--output", "-r"),
                          read_options=_fs("-i", "--input", "-d", "--directory"))
SPECS["make"] = PathSpec(value_options=_fs("-f", "-C", "-I", "-j", "-l", "-o", "-W", "--file",
                         "--makefile", "--directory", "--include-dir", "--jobs"),
                         read_options=_fs("-f", "--file", "--makefile", "-C", "--directory",
                                          "-I", "--include-dir"))
for _name in ("cd", "pushd"):
    SPECS[_name] = PathSpec(reads="first")
SPECS["find"] = PathSpec(reads="all")
SPECS["dd"] = PathSpec()
SPECS["xxd"] = PathSpec(reads="first", writes="second", value_options=_fs("-c", "-g", "-l",
                        "-s", "-o", "-n"))
SPECS["split"] = PathSpec(reads="first", writes="second", value_options=_fs("-l", "-b", "-n",
                          "-a", "-C", "-t", "--additional-suffix"))
# Each family with its own value options: a flag read as taking a value hides what follows
# it (python's -I is isolated mode, a flag; read as ruby's `-I DIR` it swallowed the `-c` of
# `python3 -I -c CODE`, which then ran as a "workspace script" in a trusted workspace).
for _name in ("python", "python3", "pypy3"):
    SPECS[_name] = PathSpec(reads="first", value_options=_fs(
        "-m", "-W", "-X", "-c", "--check-hash-based-pycs"))
for _name in ("python2", "pypy"):  # Python 2's -Q takes a value; Python 3 has no -Q
    SPECS[_name] = PathSpec(reads="first", value_options=_fs("-m", "-W", "-c", "-Q"))
for _name in ("node", "deno", "bun", "tsx", "ts-node"):  # node's -c is --check, a flag
    SPECS[_name] = PathSpec(reads="first", value_options=_fs(
        "-e", "-p", "-r", "--eval", "--print", "--require", "--import", "--loader",
        "--experimental-loader", "-C", "--conditions", "--env-file", "--input-type"))
for _name in ("ruby", "perl", "php", "lua", "Rscript"):
    SPECS[_name] = PathSpec(reads="first", value_options=_fs("-m", "-W", "-X", "-c", "-e",
                            "-r", "-I", "--require", "--import", "--loader"))
SPECS["git"] = PathSpec(value_options=_fs("-C", "-c", "--git-dir", "--work-tree",
                        "--namespace", "--exec-path", "--config-env", "--super-prefix"),
                        read_options=_fs("-C", "--git-dir", "--work-tree"))


def spec_for(name: str) -> PathSpec | None:
    spec = SPECS.get(name)
    if spec is None and name.startswith("python3."):
        spec = SPECS["python3"]
    return spec


_MODE: Final = re.compile(r"[0-7]{1,4}|([ugoa]*[-+=][rwxXstugo]*,?)+")


class PathArgs:
    """The paths an argv reads and writes. (A plain slotted class: a compiled NamedTuple
    builds itself in interpreted code.)"""

    __slots__ = ("reads", "writes")

    def __init__(self, reads: tuple[str, ...], writes: tuple[str, ...]) -> None:
        self.reads = reads
        self.writes = writes


def _pick(mode: str, pos: tuple[str, ...]) -> tuple[str, ...]:
    if mode == "all":
        return pos
    if mode == "first":
        return pos[:1]
    if mode == "second":
        return pos[1:2]
    if mode == "after_first":
        return pos[1:]
    if mode == "last":
        return pos[-1:] if len(pos) > 1 else ()
    if mode == "but_last":
        return pos[:-1] if len(pos) > 1 else pos
    return ()


def path_args(name: str, args: list[str], sc: Scan | None = None) -> PathArgs:
    """Which arguments of `name args...` are read and which are written. `sc`: the caller's
    scan of args with exactly the spec's value options, if it has one."""
    spec = spec_for(name)
    if spec is None:
        return PathArgs((), ())
    if name == "dd":
        return PathArgs(tuple(a[3:] for a in args if a.startswith("if=")),
                        tuple(a[3:] for a in args if a.startswith("of=")))
    if name == "find":
        starts: list[str] = []
        for a in args:
            if a.startswith(("-", "(", "!")) and a != DYN:
                break
            starts.append(a)
        return PathArgs(tuple(starts), ())
    if name == "chmod":
        targets = tuple(a for a in args if not a.startswith("-") and not _MODE.fullmatch(a))
        return PathArgs((), targets)
    if sc is None:
        sc = scan(args, spec.value_options)
    pos = sc.positionals
    options = sc.options
    if not options and name not in ("sed", "ln"):  # nothing below depends on options
        reads_t = _pick(spec.reads, pos)
        writes_t = _pick(spec.writes, pos)
        return PathArgs(reads_t if "-" not in reads_t else tuple(r for r in reads_t if r != "-"),
                        writes_t if "-" not in writes_t else tuple(w for w in writes_t if w != "-"))
    names = {o for o, _ in options}
    reads_mode, writes_mode = spec.reads, spec.writes
    if spec.pattern_options & names:
        reads_mode = "all" if reads_mode == "after_first" else reads_mode
        writes_mode = "all" if writes_mode == "after_first" else writes_mode
    if name == "sed" and any(o in ("-i", "--in-place") or o.startswith("--in-place")
                             for o in names):
        writes_mode = reads_mode
    if name in ("gzip", "gunzip", "bzip2", "xz", "zstd", "lz4") and (
        "-c" in names or "--stdout" in names
    ):
        writes_mode, reads_mode = "none", "all"
    if name == "ln" and len(pos) == 1:
        reads_mode, writes_mode = "all", "none"
    reads: list[str] = list(_pick(reads_mode, pos))
    writes: list[str] = list(_pick(writes_mode, pos))
    for opt, value in sc.options:
        if value is None:
            continue
        if opt in spec.read_options:
            reads.append(value)
        if opt in spec.write_options:
            writes.append(value)
    return PathArgs(tuple(r for r in reads if r != "-"), tuple(w for w in writes if w != "-"))
