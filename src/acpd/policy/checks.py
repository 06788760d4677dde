"""Named argument checks a rule can use (`check = "..."`): things a glob cannot say."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from acpd.policy import pathtext
from acpd.policy.argspec import scan, spec_for
from acpd.policy.sandbox import inside, resolve
from acpd.policy.words import DYN


class CheckContext:
    """Where a check's command runs. (A plain slotted class: mypyc leaves a dataclass's
    generated `__init__` interpreted.)"""

    __slots__ = ("cwd", "roots")

    def __init__(self, cwd: str, roots: tuple[str, ...]) -> None:
        self.cwd = cwd
        self.roots = roots


Check = Callable[[str, list[str], CheckContext], bool]

_INLINE: Final = frozenset({"-c", "-e", "-E", "-r", "-m", "-p", "--eval", "--print", "-i", "-n",
                            "-a", "-l", "-x"})


def script_in_workspace(name: str, args: list[str], ctx: CheckContext) -> bool:
    """`python3 scripts/x.py`, `sh ./build.sh`: the program runs a file from the workspace."""
    spec = spec_for(name)
    values = spec.value_options if spec else frozenset()
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--"):
        if args[i] in _INLINE:
            return False
        i += 2 if args[i] in values else 1
    if i < len(args) and args[i] == "--":
        i += 1
    if i >= len(args) or args[i] in ("-", DYN) or DYN in args[i]:
        return False
    path = args[i]
    full = pathtext.normpath(path if path.startswith("/") else pathtext.join(ctx.cwd, path))
    if "\x00" in full:  # no file has that name (and realpath would raise)
        return False
    real = resolve(full)
    return inside(full, ctx.roots) is not None and inside(real, ctx.roots) is not None


def sed_exec(name: str, args: list[str], ctx: CheckContext) -> bool:
    """GNU sed runs commands with the `e` command or the `e` flag of `s`; `w`/`W` and
    `s///w` write (the file is opened while the script is read, even when never reached).
    The script is read with GNU's own grammar (`programs.sedparse`); one that cannot be
    read with certainty is not this rule's: the spec asks for it."""
    from acpd.policy.programs.scripts import SED, sed_chunks
    from acpd.policy.programs.sedparse import parse_sed
    from acpd.policy.programs.spec import Model, parse_argv

    chunks = sed_chunks(parse_argv(SED, args, Model("sed")))
    if any(DYN in c for c in chunks):
        return True
    for cmd, arg in parse_sed(tuple(chunks)).commands:
        if cmd in "eWw" or (cmd == "s" and "e" in arg):
            return True
    return False


_AWK_EXEC: Final = re.compile(r"\bsystem\s*\(|\|\s*(getline|&)|\|\s*\"|\"\s*\|\s*getline|\|&"
                              r"|\bprint[f]?\b[^;}]*\|")


def awk_exec(name: str, args: list[str], ctx: CheckContext) -> bool:
    """awk runs commands through system(), `print | "cmd"` and `"cmd" | getline`."""
    sc = scan(args, frozenset({"-v", "-F", "-f", "--assign", "--field-separator", "--file"}))
    if any(o in ("-f", "--file") for o, _ in sc.options):
        return True
    program = sc.positionals[0] if sc.positionals else ""
    if DYN in program or _AWK_EXEC.search(program):
        return True
    from acpd.policy.programs.awkscan import scan_awk

    facts = scan_awk(program)  # a `|` the lexer finds in code (the raw regex above misses
    return facts.uncertain is None and facts.code == "the program pipes to a command"


_PUSH_VALUES: Final = frozenset({"-o", "--push-option", "--repo", "--receive-pack", "--exec"})


def _push_remote(args: list[str]) -> str | None:
    """The remote of `git ... push ...`, or None when it is the default."""
    try:
        k = args.index("push")
    except ValueError:
        return None
    sc = scan(args[k + 1 :], _PUSH_VALUES)
    repo = [v for o, v in sc.options if o == "--repo" and v]
    if repo:
        return repo[-1]
    return sc.positionals[0] if sc.positionals else None


def push_origin(name: str, args: list[str], ctx: CheckContext) -> bool:
    remote = _push_remote(args)
    return remote is None or remote == "origin"


def push_not_origin(name: str, args: list[str], ctx: CheckContext) -> bool:
    return not push_origin(name, args, ctx)


_CONFIG_WRITE: Final = ("--add", "--unset", "--unset-all", "--replace-all", "--edit", "-e",
                        "--rename-section", "--remove-section", "--global", "--system", "--file",
                        "-f", "--worktree")


def git_config_write(name: str, args: list[str], ctx: CheckContext) -> bool:
    """`git config KEY VALUE` and friends write .git/config (or ~/.gitconfig)."""
    try:
        k = args.index("config")
    except ValueError:
        return False
    rest = args[k + 1 :]
    sc = scan(rest, frozenset({"--file", "-f", "--blob", "--type", "--default"}))
    if any(o in _CONFIG_WRITE for o, _ in sc.options):
        return True
    pos = sc.positionals
    if pos and pos[0] in ("set", "unset", "edit", "rename-section", "remove-section"):
        return True
    return len(pos) >= 2 and not any(o in ("--get", "--get-all", "--get-regexp", "-l", "--list")
                                     for o, _ in sc.options)


def tar_extract_git(name: str, args: list[str], ctx: CheckContext) -> bool:
    """A tar extraction writes a member under a `.git` directory (`programs.archive`)."""
    from acpd.policy.programs.archive import judge_members

    return judge_members(args, ctx.cwd, ctx.roots)[0]


def tar_extract_unlisted(name: str, args: list[str], ctx: CheckContext) -> bool:
    """A tar extraction whose members cannot be listed, or land outside the workspace,
    through links or by absolute names (`programs.archive`)."""
    from acpd.policy.programs.archive import judge_members

    return judge_members(args, ctx.cwd, ctx.roots)[1]


CHECKS: dict[str, Check] = {
    "script-in-workspace": script_in_workspace,
    "sed-exec": sed_exec,
    "awk-exec": awk_exec,
    "tar-extract-git": tar_extract_git,
    "tar-extract-unlisted": tar_extract_unlisted,
    "push-origin": push_origin,
    "push-not-origin": push_not_origin,
    "git-config-write": git_config_write,
}


# ---- git destruction, push deletions, system state (issue 15, classes 7 and 9) -------------

_DESTRUCTIVE_ALWAYS: Final = frozenset({"restore", "rebase", "filter-branch", "filter-repo",
                                        "replace", "prune"})


def _git_sub(args: list[str]) -> tuple[str | None, list[str]]:
    sub, rest, _dirs = git_subcommand(args)
    return sub, rest


def git_subcommand(args: list[str]) -> tuple[str | None, list[str], list[str]]:
    """git's subcommand, the words after it, and its `-C` directories in order."""
    from acpd.policy.programs.git import GLOBAL
    from acpd.policy.programs.spec import Model, parse_argv

    parsed = parse_argv(GLOBAL, args, Model("git"))
    pos = list(parsed.positionals)
    if not pos:
        return None, [], []
    return pos[0], pos[1:], parsed.values("-C")


def git_destructive(name: str, args: list[str], ctx: CheckContext) -> bool:
    """Git forms that discard work or history without `--force` in their name."""
    from acpd.policy.programs import model

    sub, rest = _git_sub(args)
    if sub is None:
        return False
    if sub in _DESTRUCTIVE_ALWAYS:
        return True
    m = model("git", args)
    if m is not None and any(v == "ask" and r in ("spec.git", "git.destructive")
                             for v, r, _ in m.findings):
        return True
    opts = [a for a in rest if a.startswith("-")]
    pos = [a for a in rest if not a.startswith("-")]
    if sub == "checkout":
        if "--" in rest or any(option_is(o, ("-f", "--force", "--merge", "-m", "-p",
                                             "--patch", "--ours", "--theirs", "-B",
                                             "--overwrite-ignore")) for o in opts):
            return True
        if any(o in ("-b", "--orphan") or o.startswith("-b") for o in opts):
            return False
        return any(p == "." or pathtext.lexists(pathtext.join(ctx.cwd, p)) for p in pos)
    if sub == "reset":
        return any(option_is(o, ("--hard", "--merge", "--keep")) for o in opts)
    if sub == "gc":
        return any(option_is(o.partition("=")[0], ("--prune", "--aggressive")) for o in opts)
    if sub == "update-ref":
        return any(option_is(o, ("-d", "--stdin", "--no-deref")) for o in opts)
    if sub in ("worktree", "notes"):
        return bool(pos) and pos[0] in ("remove", "prune", "move")
    if sub == "symbolic-ref":
        return any(option_is(o, ("-d", "--delete")) for o in opts)
    return False


def option_is(word: str, names: tuple[str, ...]) -> bool:
    """`word` (as written, `=value` stripped) is one of `names`, a long prefix included, or a
    short cluster holding one of the short names."""
    from acpd.policy.argspec import option_matches

    head = word.partition("=")[0]
    for spec in names:
        if option_matches(spec, head):
            return True
        if len(spec) == 2 and head.startswith("-") and not head.startswith("--") and \
                spec[1] in head[1:]:
            return True
    return False


def push_deletes(name: str, args: list[str], ctx: CheckContext) -> bool:
    sub, rest = _git_sub(args)
    if sub != "push":
        return False
    sc = scan(rest, _PUSH_VALUES)
    if any(option_is(o, ("-d", "--delete", "--prune")) for o, _ in sc.options):
        return True
    return any(p.startswith(":") or p.startswith("+:") for p in sc.positionals[1:])


_SYSTEMCTL_READ: Final = frozenset({"status", "show", "cat", "list-units", "list-unit-files",
                                    "list-sockets", "list-timers", "list-jobs", "list-dependencies",
                                    "list-machines", "is-active", "is-enabled", "is-failed",
                                    "is-system-running", "help", "get-default", "show-environment"})
_IP_WRITE: Final = frozenset({"add", "del", "delete", "set", "change", "replace", "flush", "append",
                              "prepend", "exec", "attach", "detach", "save", "restore", "update",
                              "up", "down", "load", "unload"})
_ALWAYS_STATE: Final = frozenset({"shutdown", "reboot", "poweroff", "halt", "init", "telinit",
                                  "setenforce", "modprobe", "insmod", "rmmod", "swapon", "swapoff",
                                  "umount", "iptables-restore", "update-grub", "grub-install",
                                  "efibootmgr", "ntpdate", "losetup", "zramctl", "brctl", "tc",
                                  "rfkill", "loginctl"})


def system_state(name: str, args: list[str], ctx: CheckContext) -> bool:
    """Does `name args` change the machine's state (clock, network, services, mounts...)?"""
    pos = [a for a in args if not a.startswith("-")]
    opts = [a for a in args if a.startswith("-")]
    if name in _ALWAYS_STATE:
        return not (name in ("loginctl", "rfkill", "losetup", "zramctl", "tc", "brctl")
                    and (not pos or pos[0] in ("list", "show", "list-sessions", "list-users",
                                               "show-session", "show-user", "session-status",
                                               "user-status")))
    if name == "sysctl":
        return bool(any("=" in p for p in pos) or any(option_is(o, (
            "-w", "--write", "-p", "--load", "--system")) for o in opts))
    if name == "ip":
        return any(p in _IP_WRITE for p in pos)
    if name == "systemctl":
        return bool(pos) and pos[0] not in _SYSTEMCTL_READ
    if name == "service":
        return len(pos) >= 2 and pos[1] != "status"
    if name in ("timedatectl", "hostnamectl", "localectl"):
        return any(p.startswith("set-") for p in pos)
    if name == "mount":
        return bool(pos) or any(option_is(o, ("-a", "--all", "--bind", "--move")) for o in opts)
    if name == "hwclock":
        return any(option_is(o, ("--set", "-w", "--systohc", "-s", "--hctosys", "--adjust",
                                 "--systz")) for o in opts)
    if name == "nmcli":
        return any(p in ("on", "off", "up", "down", "connect", "disconnect", "add", "delete",
                         "modify", "reload", "hostname", "reapply", "set", "edit", "import")
                   for p in pos)
    if name in ("ifconfig", "route"):
        return len(pos) >= 2 or any(p in ("add", "del", "delete", "flush") for p in pos)
    if name in ("iptables", "ip6tables"):
        return not all(option_is(o, ("-L", "--list", "-S", "--list-rules", "-n", "-v", "-t",
                                     "--numeric", "--verbose", "--table", "--line-numbers"))
                       for o in opts) or not opts
    if name == "nft":
        return not pos or pos[0] not in ("list", "describe")
    if name == "ethtool":
        return any(o.startswith("-s") or o.startswith("-K") or o.startswith("--change")
                   or o in ("-A", "-G", "-L", "-C", "-E", "-f", "-r", "-p", "-W")
                   for o in opts)
    if name == "chronyc":
        return any(p in ("settime", "makestep", "burst", "offline", "online", "add", "delete")
                   for p in pos)
    return True


CHECKS.update({
    "git-destructive": git_destructive,
    "push-deletes": push_deletes,
    "system-state": system_state,
})
