"""Wrappers resolved before matching: the inner command is judged as if it stood alone.

`env`, `command`, `exec`, `nohup`, `nice`, `timeout`, `time`, `stdbuf`, `setsid`, `xargs`,
`flock`, `ionice`, `taskset`, `chrt`, `watch`, `strace`, `busybox`, `builtin`, `coproc`,
`parallel`, `unbuffer`; payloads of `sh -c`/`bash -c`, `eval`, `su -c`, `script -c`, `trap`,
`watch`, `flock -c`, `env -S`; `find -exec` and `fd -x` argv. A wrapper whose inner command
cannot be found is at least ask.
"""

from __future__ import annotations

import shlex
from typing import Final

from acpd.policy import pathtext
from acpd.policy.argspec import scan
from acpd.policy.blocklist import SHELLS
from acpd.policy.decision import Verdict
from acpd.policy.programs.spec import Model, Parsed, Program, parse_argv, program
from acpd.policy.words import DYN

MAX_PEEL: Final = 16


class Resolution:
    """What peeling a command's wrappers found. (A plain slotted class: a compiled dataclass
    builds itself in interpreted code, a call per default list, ~20k instructions.)"""

    __slots__ = ("argv", "assigns", "chain", "extra_argvs", "findings", "payloads", "reads",
                 "writes")

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.assigns: list[tuple[str, str]] = []
        self.payloads: list[str] = []
        self.extra_argvs: list[list[str]] = []
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.findings: list[tuple[Verdict, str, str]] = []
        self.chain: list[str] = []


def _fs(*items: str) -> frozenset[str]:
    return frozenset(items)


# name -> options taking a value, number of leading positionals that are not the command
# (Only wrappers that are denied by name or take no option: a wrapper whose options matter
# has a table below, so that clusters and long prefixes are read as getopt reads them.)
_SIMPLE: dict[str, tuple[frozenset[str], int]] = {
    "builtin": (_fs(), 0),
    "sudo": (_fs("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user",
                 "--group", "--chdir", "--prompt"), 0),
    "doas": (_fs("-u", "-C"), 0),
}
_ENV_VALUES: Final = _fs("-u", "-C", "-S", "-P", "--unset", "--chdir", "--split-string")
_SHELL_VALUES: Final = _fs("-o", "-O", "+o", "+O", "--rcfile", "--init-file")


# ---- option tables (GNU getopt_long: clusters, attached values, unique long prefixes) -----
# Roles: read/write/wdir (paths), env (the value names a variable set in the child's
# environment: judged as an assignment), network, deny:/ask: (findings), pid (the command
# acts on processes: no inner command). An option a table does not know, or an ambiguous
# prefix, asks: a wrapper's options are part of what the command does.

def _table(name: str, short: str, long: str, roles: dict[str, str] | None = None,
           numeric: bool = False) -> Program:
    return program(name, short, long + " help version", roles, permute=False,
                   numeric=numeric)


_TABLES: dict[str, tuple[Program, int]] = {
    "timeout": (_table("timeout", "k:s:v", "kill-after= signal= preserve-status foreground "
                       "verbose"), 1),
    "nice": (_table("nice", "n:", "adjustment=", numeric=True), 0),
    "stdbuf": (_table("stdbuf", "i:o:e:", "input= output= error="), 0),
    "ionice": (_table("ionice", "c:n:p:P:u:t", "class= classdata= pid= pgid= uid= ignore",
                      {"-p/--pid/-P/--pgid/-u/--uid": "pid"}), 0),
    "chrt": (_table("chrt", "bdfiorRamp:T:P:D:v", "batch deadline fifo idle other rr "
                    "reset-on-fork all-tasks max pid sched-runtime= sched-period= "
                    "sched-deadline= verbose", {"-p/--pid/-m/--max": "pid"}), 1),
    "taskset": (_table("taskset", "acp", "all-tasks cpu-list pid", {"-p/--pid": "pid"}), 1),
    "setsid": (_table("setsid", "cfw", "ctty fork wait"), 0),
    "nohup": (_table("nohup", "", ""), 0),
    # GNU time, strace and ltrace write a file of their own (-o: `time -ao .git/config cmd`
    # appends to it, in a format -f chooses); what would run another user's way asks.
    "time": (_table("time", "f:o:apqvV", "format= output= append portability quiet verbose",
                    {"-o/--output": "write"}), 0),
    "strace": (_table(
        "strace", "a:b:cCdDe:E:fFhiI:kno:O:p:P:qrs:S:tTu:U:vVwxX:yzZ",
        "output= trace= signal= status= attach= trace-path= string-limit= columns= "
        "env= user= follow-forks output-separately summary-only summary summary-wall-clock "
        "summary-sort-by= summary-columns= decode-fds[=] quiet[=] absolute-timestamps[=] "
        "relative-timestamps syscall-times[=] instruction-pointer stack-trace "
        "successful-only failed-only no-abbrev[=] verbose= raw= read= write= detach-on= "
        "const-print-style= seccomp-bpf",
        {"-o/--output": "write", "-p/--attach": "pid",
         "-E/--env": "ask:sets the traced command's environment",
         "-u/--user": "ask:runs the command as another user"}), 0),
    "ltrace": (_table(
        "ltrace", "a:A:bcCD:e:fF:hiLl:n:o:p:rs:StTu:Vw:x:",
        "align= demangle debug= indent= library= output= no-signals config=",
        {"-o/--output": "write", "-p": "pid", "-F/--config": "read",
         "-u": "ask:runs the command as another user"}), 0),
    "caffeinate": (_table("caffeinate", "dimsut:w:", ""), 0),
    "unbuffer": (_table("unbuffer", "p", ""), 0),
    "flock": (_table("flock", "sxeunow:E:FV", "shared exclusive unlock nonblock nb close "
                     "wait= timeout= conflict-exit-code= no-fork verbose"), 0),
    "watch": (_table("watch", "n:d::q:egtbxcCpwr", "interval= differences[=] equexit= "
                     "errexit chgexit no-title beep exec color no-color precise no-wrap "
                     "no-rerun"), 0),
    "xargs": (_table("xargs", "0a:E:e::i::I:l::L:n:oprs:txP:d:",
                     "null arg-file= delimiter= eof[=] replace[=] max-lines[=] max-args= "
                     "open-tty interactive no-run-if-empty max-chars= show-limits verbose "
                     "exit max-procs= process-slot-var=",
                     {"-a/--arg-file": "read", "--process-slot-var": "env"}), 0),
    "parallel": (_table(
        "parallel", "0a:d:E:I:C:j:P:n:N:L:l::kqvruXmS:J:e",
        "null arg-file= delimiter= eof= colsep= jobs= max-procs= max-args= max-lines= "
        "keep-order quote verbose no-run-if-empty ungroup group line-buffer tag bar eta "
        "progress dry-run halt= timeout= retries= delay= will-cite no-notice pipe block= "
        "header= shuf nice= memfree= load= joblog= results= res= tmpdir= workdir= wd= "
        "sshlogin= sshloginfile= slf= transfer return= trc= basefile= bf= cleanup "
        "profile= xargs tty files",
        {"-a/--arg-file": "read", "--joblog/--results/--res": "write",
         "--tmpdir/--workdir/--wd": "wdir",
         "-S/--sshlogin/--sshloginfile/--slf/--transfer/--return/--trc/--basefile/--bf/"
         "--cleanup": "network",
         "-J/--profile": "ask:loads a profile of options from ~/.parallel"}), 0),
}


def _options(name: str, args: list[str], res: Resolution) -> tuple[int, Parsed, bool]:
    """Parse a wrapper's own options with its table: (index of the first word after them,
    the parse, the command acts on processes). Unknown forms ask."""
    prog, _ = _TABLES[name]
    model = Model(name)
    parsed = parse_argv(prog, args, model)
    for reason in model.unknown:
        res.findings.append(("ask", "wrapper.unmodeled", f"{reason} (wrapper option)"))
    res.findings.extend(model.findings)
    pid = False
    for opt, value in parsed.options:
        for role in opt.roles:
            if role == "read" and value is not None:
                res.reads.append(value)
            elif role in ("write", "wdir") and value is not None:
                res.writes.append(value)
            elif role == "env":
                # the child gets NAME=<slot number>: judged like `NAME=0 cmd`
                res.assigns.append((value if value is not None else DYN, "0"))
            elif role == "network":
                res.findings.append(("deny", "network", f"{name} {opt.name} runs jobs on "
                                     "other hosts (allow_network = false)"))
            elif role.startswith(("ask:", "deny:")):
                verdict: Verdict = "ask" if role.startswith("ask:") else "deny"
                res.findings.append((verdict, f"wrapper.{name}",
                                     f"{name} {opt.name}: {role.partition(':')[2]}"))
            elif role == "pid":
                pid = True
    return len(args) - len(parsed.positionals), parsed, pid


DETACHING: Final = frozenset({"setsid", "nohup", "disown", "daemonize", "coproc"})
"""Wrappers whose command may outlive the kill of its process group."""

WRAPPERS: Final = frozenset({*_SIMPLE, *_TABLES, "env", "command", "exec", "busybox", "coproc",
                             "xargs", "parallel", "flock", "watch", "eval", "trap", "su", "runuser",
                             "script", "find", "fd", "fdfind", *SHELLS})
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
        name = pathtext.basename(argv[0]) if argv[0] != DYN else DYN
        args = argv[1:]
        inner: list[str] | None
        if name in _TABLES and name not in ("xargs", "parallel", "flock", "watch"):
            start, _, pid = _options(name, args, res)
            if pid:
                return res
            inner = args[start + _TABLES[name][1] :]
        elif name in _SIMPLE:
            values, skip = _SIMPLE[name]
            start = _first_positional(args, values)
            inner = args[start + skip :]
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
            start = _options(name, args, res)[0]
            inner = [*args[start:], DYN] if args[start:] else ["echo", DYN]
        elif name == "parallel":
            start = _options(name, args, res)[0]
            inner = [*_exec_argv(args[start:], (":::", "::::", ":::+", "::::+")), DYN]
            res.reads.extend(b for a, b in zip(args[start:], args[start + 1 :], strict=False)
                             if a in ("::::", "::::+"))
        elif name == "flock":
            start = _options(name, args, res)[0]
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
            start, parsed, _ = _options(name, args, res)
            rest = args[start:]
            if parsed.has("--exec"):
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


_ENV_LONG: Final = {"ignore-environment": 0, "null": 0, "unset": 1, "chdir": 1, "split-string": 1,
                    "debug": 0, "ignore-signal": 2, "default-signal": 2, "block-signal": 2,
                    "list-signal-handling": 0, "help": 0, "version": 0}
_ENV_SHORT_VALUE: Final = frozenset("uCSP")


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
