"""Wrappers resolved before matching: the inner command is judged as if it stood alone.

`env`, `command`, `exec`, `nohup`, `nice`, `timeout`, `time`, `stdbuf`, `setsid`, `xargs`,
`flock`, `ionice`, `taskset`, `chrt`, `watch`, `strace`, `busybox`, `builtin`, `coproc`,
`parallel`, `unbuffer`; payloads of `sh -c`/`bash -c`, `eval`, `su -c`, `script -c`, `trap`,
`watch`, `flock -c`, `env -S`; `find -exec` and `fd -x` argv. A wrapper whose inner command
cannot be found is at least ask.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field

from acpd.policy.argspec import scan
from acpd.policy.blocklist import SHELLS
from acpd.policy.decision import Verdict
from acpd.policy.words import DYN

MAX_PEEL = 16


@dataclass(slots=True)
class Resolution:
    argv: list[str]
    assigns: list[tuple[str, str]] = field(default_factory=list)
    payloads: list[str] = field(default_factory=list)
    extra_argvs: list[list[str]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    findings: list[tuple[Verdict, str, str]] = field(default_factory=list)
    chain: list[str] = field(default_factory=list)


def _fs(*items: str) -> frozenset[str]:
    return frozenset(items)


# name -> options taking a value, number of leading positionals that are not the command
_SIMPLE: dict[str, tuple[frozenset[str], int]] = {
    "nohup": (_fs(), 0),
    "nice": (_fs("-n", "--adjustment"), 0),
    "timeout": (_fs("-s", "-k", "--signal", "--kill-after"), 1),
    "stdbuf": (_fs("-i", "-o", "-e", "--input", "--output", "--error"), 0),
    "setsid": (_fs(), 0),
    "ionice": (_fs("-c", "-n", "-p", "-P", "-u", "--class", "--classdata"), 0),
    "taskset": (_fs(), 1),
    "chrt": (_fs("-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"), 1),
    "strace": (_fs("-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X",
                   "-U"), 0),
    "ltrace": (_fs("-o", "-e", "-p", "-s", "-u", "-a", "-n", "-A", "-D", "-F", "-l", "-w"), 0),
    "unbuffer": (_fs(), 0),
    "builtin": (_fs(), 0),
    "caffeinate": (_fs("-t", "-w"), 0),
    "time": (_fs("-f", "-o", "--format", "--output"), 0),
    "sudo": (_fs("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user",
                 "--group", "--chdir", "--prompt"), 0),
    "doas": (_fs("-u", "-C"), 0),
}
_XARGS_VALUES = _fs("-a", "-E", "-I", "-L", "-n", "-P", "-s", "-d", "--arg-file", "--delimiter",
                    "--max-args", "--max-lines", "--max-procs", "--max-chars",
                    "--process-slot-var", "--eof", "--replace")
_PARALLEL_VALUES = _fs("-j", "-P", "-S", "-n", "-N", "-L", "-l", "-a", "-d", "-E", "-I", "-C",
                       "--jobs", "--sshlogin", "--arg-file", "--colsep", "--timeout",
                       "--joblog", "--results", "--workdir", "--tmpdir", "--delimiter")
_ENV_VALUES = _fs("-u", "-C", "-S", "-P", "--unset", "--chdir", "--split-string")
_SHELL_VALUES = _fs("-o", "-O", "+o", "+O", "--rcfile", "--init-file")
_WATCH_VALUES = _fs("-n", "-d", "-q", "--interval", "--differences", "--equexit")


DETACHING = frozenset({"setsid", "nohup", "disown", "daemonize", "coproc"})
"""Wrappers whose command may outlive the kill of its process group."""

WRAPPERS = frozenset({*_SIMPLE, "env", "command", "exec", "busybox", "coproc", "xargs",
                      "parallel", "flock", "watch", "eval", "trap", "su", "runuser", "script",
                      "find", "fd", "fdfind", *SHELLS})
"""Every name `unwrap` acts on: any other command comes back from it unchanged."""


def _first_positional(args: list[str], values: frozenset[str]) -> int:
    """Index in args of the first word that is not an option (or an option's value)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return i + 1
        if not arg.startswith("-") or arg == "-" or arg == DYN:
            return i
        name = arg.partition("=")[0]
        if "=" not in arg and (name in values or (len(arg) == 2 and arg in values)):
            i += 2
        else:
            i += 1
    return i


def _shell(argv: list[str], res: Resolution) -> list[str] | None:
    """`sh -c PAYLOAD`, `sh SCRIPT`, or a shell reading stdin (blocked)."""
    args = argv[1:]
    command_mode = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or arg == "-":
            i += 1
            break
        if arg in _SHELL_VALUES:
            if arg in ("--rcfile", "--init-file") and i + 1 < len(args):
                res.findings.append(("deny", "blocklist.rcfile", f"{argv[0]} {arg} runs a file"))
            i += 2
            continue
        if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
            if "c" in arg[1:]:
                command_mode = True
            if "s" in arg[1:]:
                res.findings.append(("deny", "blocklist.shell-stdin",
                                     f"{argv[0]} -s reads its script from stdin"))
            i += 1
            continue
        if arg.startswith("--"):
            i += 1
            continue
        break
    rest = args[i:]
    if command_mode:
        if not rest:
            res.findings.append(("ask", "wrapper.unresolved", f"{argv[0]} -c without a script"))
        elif rest[0] == DYN:
            res.findings.append(("ask", "wrapper.dynamic", f"{argv[0]} -c with a dynamic script"))
        else:
            res.payloads.append(rest[0])
        return None
    if not rest:
        res.findings.append(("deny", "blocklist.shell-stdin",
                             f"{argv[0]} reads its script from stdin"))
        return None
    return [argv[0], *rest]


def _payload(res: Resolution, name: str, text: str | None) -> None:
    if text is None:
        res.findings.append(("ask", "wrapper.unresolved", f"cannot find what {name} runs"))
    elif DYN in text:
        res.findings.append(("ask", "wrapper.dynamic", f"{name} runs a dynamic string"))
    else:
        res.payloads.append(text)


def _exec_argv(args: list[str], stops: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for a in args:
        if a in stops:
            break
        out.append(DYN if "{}" in a else a)
    return out


def unwrap(argv: list[str]) -> Resolution:
    """Peel wrappers off argv; the result's argv is the command that really runs."""
    res = Resolution(argv)
    for _ in range(MAX_PEEL):
        argv = res.argv
        if not argv:
            return res
        name = os.path.basename(argv[0]) if argv[0] != DYN else DYN
        args = argv[1:]
        inner: list[str] | None
        if name in _SIMPLE:
            values, skip = _SIMPLE[name]
            start = _first_positional(args, values)
            if name == "taskset" and any(a in ("-p", "--pid") for a in args[:start]):
                return res
            if name in ("strace", "ltrace"):
                res.writes.extend(v for o, v in scan(args[:start], values).options
                                  if o == "-o" and v)
            if name == "time":
                res.writes.extend(v for o, v in scan(args[:start], values).options
                                  if o in ("-o", "--output") and v)
            inner = args[start + skip :]
            if name == "chrt" and any(a in ("-p", "--pid") for a in args[:start]):
                return res
        elif name == "env":
            inner = _env(args, res)
        elif name == "command":
            start = _first_positional(args, _fs())
            if any(a in ("-v", "-V") for a in args[:start]):
                return res
            inner = args[start:]
        elif name == "exec":
            start = _first_positional(args, _fs("-a"))
            inner = args[start:]
        elif name == "busybox":
            inner = args[_first_positional(args, _fs()) :]
        elif name == "coproc":
            if len(args) > 1 and args[0].isupper():
                res.extra_argvs.append([a for a in args[1:] if a not in ("{", "(")])
            inner = [a for a in args if a not in ("{", "(")]
        elif name == "xargs":
            start = _first_positional(args, _XARGS_VALUES)
            inner = [*args[start:], DYN] if args[start:] else ["echo", DYN]
            res.reads.extend(v for o, v in scan(args[:start], _XARGS_VALUES).options
                             if o in ("-a", "--arg-file") and v)
        elif name == "parallel":
            start = _first_positional(args, _PARALLEL_VALUES)
            inner = [*_exec_argv(args[start:], (":::", "::::", ":::+")), DYN]
        elif name == "flock":
            start = _first_positional(args, _fs("-w", "-E", "--timeout", "--conflict-exit-code"))
            rest = args[start:]
            if rest:
                res.writes.append(rest[0])
            if len(rest) >= 3 and rest[1] in ("-c", "--command"):
                _payload(res, "flock -c", rest[2])
                inner = []
            else:
                inner = rest[1:]
                if not inner and rest and not rest[0].isdigit():
                    res.findings.append(("ask", "wrapper.unresolved", "flock without a command"))
        elif name == "watch":
            start = _first_positional(args, _WATCH_VALUES)
            rest = args[start:]
            if any(a in ("-x", "--exec") for a in args[:start]):
                inner = rest
            else:
                _payload(res, "watch", " ".join(rest) if rest else None)
                inner = []
        elif name in ("eval",):
            _payload(res, "eval", " ".join(args) if args else "")
            inner = []
        elif name == "trap":
            if args and args[0] not in ("-", "-p", "-l", "--") and not args[0].isdigit():
                _payload(res, "trap", args[0])
            res.findings.append(("ask", "wrapper.trap", "trap installs a handler that runs later"))
            inner = []
        elif name in ("su", "runuser", "script"):
            sc = scan(args, _fs("-c", "--command", "-s", "--shell", "-g", "-G", "-u", "-l"))
            cmds = [v for o, v in sc.options if o in ("-c", "--command")]
            for text in cmds:
                _payload(res, f"{name} -c", text)
            if name == "script" and not cmds:
                res.findings.append(("ask", "wrapper.unresolved", "script without -c runs a shell"))
            return res
        elif name == "find":
            _find(args, res)
            return res
        elif name in ("fd", "fdfind"):
            for i, a in enumerate(args):
                if a in ("-x", "--exec", "-X", "--exec-batch"):
                    res.extra_argvs.append([*_exec_argv(args[i + 1 :], (";",)), DYN])
            return res
        elif name in SHELLS:
            inner = _shell(argv, res)
            res.argv = [] if inner is None else inner
            return res
        else:
            return res
        res.chain.append(name)
        if not inner:
            if name in ("nohup", "nice", "timeout", "stdbuf", "setsid", "ionice", "chrt",
                        "strace", "ltrace", "unbuffer", "builtin", "caffeinate", "taskset"):
                res.findings.append(("ask", "wrapper.unresolved",
                                     f"cannot find the command {name} runs"))
            res.argv = [] if name not in ("env", "time", "exec", "command", "xargs") else [name]
            if name == "env" and not inner:
                res.argv = ["env"]
            return res
        res.argv = list(inner)
    res.findings.append(("ask", "wrapper.too-deep", "too many nested wrappers"))
    return res


_ENV_LONG = {"ignore-environment": 0, "null": 0, "unset": 1, "chdir": 1, "split-string": 1,
             "debug": 0, "ignore-signal": 2, "default-signal": 2, "block-signal": 2,
             "list-signal-handling": 0, "help": 0, "version": 0}
_ENV_SHORT_VALUE = frozenset("uCSP")


def _env_option(args: list[str], i: int) -> tuple[str, str | None, int]:
    """(canonical option, its value, next index) for `env`'s option at args[i] (GNU getopt:
    clusters `-iC dir`, attached values `-Cdir`, long prefixes `--ch=dir`); ("?", None, i+1)
    for an option env does not have."""
    arg = args[i]
    if arg.startswith("--"):
        word, eq, value = arg[2:].partition("=")
        hits = [w for w in _ENV_LONG if w.startswith(word)] if word else []
        if len(hits) != 1:
            return "?", None, i + 1
        takes = _ENV_LONG[hits[0]]
        if takes == 1 and not eq:
            return hits[0], args[i + 1] if i + 1 < len(args) else None, i + 2
        return hits[0], value if eq else None, i + 1
    for k, letter in enumerate(arg[1:], start=1):
        if letter in _ENV_SHORT_VALUE:
            name = {"u": "unset", "C": "chdir", "S": "split-string", "P": "path"}[letter]
            rest = arg[k + 1 :]
            if rest:
                return name, rest, i + 1
            return name, args[i + 1] if i + 1 < len(args) else None, i + 2
        if letter not in "i0v":
            return "?", None, i + 1
    return "flags", None, i + 1


def _env(args: list[str], res: Resolution) -> list[str]:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg.startswith("-") and arg not in ("-", DYN):
            name, value, i = _env_option(args, i)
            if name == "split-string":
                text = value or ""
                try:
                    split = shlex.split(text)
                except ValueError:
                    res.findings.append(("ask", "wrapper.unresolved",
                                         "env -S string does not split"))
                    split = text.split()
                return [*split, *args[i:]]
            if name == "chdir":
                if value is not None:
                    res.reads.append(value)
                # the inner command's directory is not the one the policy judges it in
                res.findings.append(("ask", "wrapper.chdir", "env -C runs the command in "
                                     "another directory"))
            elif name in ("path", "?"):
                res.findings.append(("ask", "wrapper.unresolved",
                                     f"env option {arg!r} changes how the command is found"))
            continue
        if arg == "-":  # `env -` is `env -i`
            i += 1
            continue
        if "=" in arg and not arg.startswith("="):
            name, _, value = arg.partition("=")
            res.assigns.append((name, value))
            i += 1
            continue
        break
    return args[i:]


def _find(args: list[str], res: Resolution) -> None:
    for i, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = _exec_argv(args[i + 1 :], (";", "+", "\\;"))
            res.extra_argvs.append(inner if inner else [DYN])
