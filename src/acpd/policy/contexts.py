"""Where bash evaluates text a second time, and every way a builtin assigns a variable.

Two facts of bash drive this module (both checked against bash 5.2):

* An array subscript is expanded again when it is evaluated, so text that reaches an
  arithmetic context or a variable-name operand and holds `[...$(cmd)...]` runs `cmd`, even
  when it was single-quoted on the command line: `(( 'a[$(id)]' ))`, `test -v 'a[$(id)]'`,
  `printf -v 'a[$(id)]' x`, `read 'a[$(id)]'`, `${a['$(id)']}`, `a['$(id)']=1`,
  `[[ x -eq 'a[$(id)]' ]]`, `let`, `declare -a/-i`, `${x:off:len}`, `${!x}` and namerefs.
* Arithmetic evaluates the *values* of the variables it names, recursively: `read x < f;
  echo $((x))` runs whatever `f` holds. A variable whose value the command line does not fix
  (read, mapfile, getopts, select, printf -v, a loop over a glob, a positional parameter of a
  `sh -c` payload or a function) is *tainted*; naming one in an arithmetic or name context asks.

Builtins assign variables without an `=` in sight: `read PATH < f`, `printf -v PATH ...`,
`mapfile PATH`, `getopts o PATH`, `wait -p PATH`, `declare "PATH=/x"`, `declare -n r=PATH`
(a nameref), `(( PATH=1 ))`, `let PATH=1`, `for PATH in ...`, `select PATH in ...`,
`${PATH:=x}`, `coproc PATH {...}`, `exec {PATH}>f`. `builtin_operands` names them all so the
engine can put each through the environment blocklist.
"""

from __future__ import annotations

import re
from typing import Final

from acpd.policy.blocklist import env_verdict, word_findings
from acpd.policy.decision import Findings
from acpd.policy.words import DYN

NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REF: Final = re.compile(r"\$\{?[#!]?([A-Za-z_][A-Za-z0-9_]*|[0-9@*])")
_IDENT: Final = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)")
_POSITIONAL: Final = re.compile(r"\$\{?[#!]?[0-9@*]")
_ASSIGN_OP: Final = re.compile(r"\s*(?:(?:[-+*/%&|^]|<<|>>|\*\*)?=(?!=)|\+\+|--)")
_PRE_INCREMENT: Final = re.compile(r"(?:\+\+|--)\s*$")
_SUBST: Final = re.compile(r"\$\((?!\()|`")
_SPECIAL_PARAM: Final = re.compile(r"[0-9@*#?$!-]")
"""A command substitution in text an arithmetic context expands again (`$((` is arithmetic)."""
_ARITH_COMPARE: Final = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
DECLARERS: Final = frozenset({"declare", "typeset", "local", "export", "readonly"})
ASSIGNERS: Final = frozenset({"read", "mapfile", "readarray", "printf", "getopts", "wait", "let",
                              "unset", "test", "[", "[[", "coproc", *DECLARERS})
"""Builtins with operands that name variables or are arithmetic."""

_READ_VALUES: Final = frozenset("dinNptu")
_MAPFILE_VALUES: Final = frozenset("dnOsuCc")


class Operands:
    """What a builtin's operands are. (A plain slotted class, made per builtin judged:
    mypyc leaves a dataclass's generated `__init__` interpreted.)"""

    __slots__ = ("arith", "assigned", "integer", "name_values", "namerefs", "names",
                 "tainting")

    def __init__(self) -> None:
        self.assigned: list[str] = []
        """Operands naming a variable the builtin assigns (maybe with a subscript)."""
        self.names: list[str] = []
        """Operands naming a variable that is read or removed (`test -v`, `unset`)."""
        self.arith: list[str] = []
        """Operands evaluated as arithmetic (`let`, `[[ a -eq b ]]`, `declare -i x=v`)."""
        self.name_values: list[str] = []
        """Values that are themselves variable names (`declare -n r=NAME`)."""
        self.namerefs: list[str] = []
        self.tainting = False
        """The assigned values come from outside the command line (read, mapfile...)."""
        self.integer = False


def _flags(args: list[str]) -> tuple[str, int]:
    """The letters of leading `-x`/`+x` option words and the index after them."""
    letters = ""
    i = 0
    while i < len(args) and len(args[i]) > 1 and args[i][0] in "-+" and args[i] != "--":
        letters += args[i][1:]
        i += 1
    if i < len(args) and args[i] == "--":
        i += 1
    return letters, i


def _getopt(args: list[str], with_value: frozenset[str]) -> tuple[list[tuple[str, str]], int]:
    """Short options (`-a NAME`, `-aNAME`, clusters) up to the first operand."""
    opts: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return opts, i + 1
        if len(arg) < 2 or arg[0] != "-" or DYN in arg[:2]:
            break
        i += 1
        for k, letter in enumerate(arg[1:], start=1):
            if letter in with_value:
                value = arg[k + 1 :]
                if not value and i < len(args):
                    value, i = args[i], i + 1
                opts.append((letter, value))
                break
            opts.append((letter, ""))
    return opts, i


def builtin_operands(argv: list[str]) -> Operands:
    """What the builtin `argv[0]` (already unwrapped) does with its operands."""
    name, args = argv[0], argv[1:]
    ops = Operands()
    if name in DECLARERS:
        letters, i = _flags(args)
        if "f" in letters or "F" in letters:
            return ops
        ops.integer = "i" in letters
        nameref = "n" in letters
        for arg in args[i:]:
            var, eq, value = arg.partition("=")
            var = var.removesuffix("+")
            ops.assigned.append(var)
            if nameref:
                ops.namerefs.append(var)
                if eq:
                    ops.name_values.append(value)
            elif eq and ops.integer:
                ops.arith.append(value)
    elif name == "read":
        opts, i = _getopt(args, _READ_VALUES | {"a"})
        ops.assigned += [v for o, v in opts if o == "a"] + args[i:]
        ops.tainting = True
    elif name in ("mapfile", "readarray"):
        opts, i = _getopt(args, _MAPFILE_VALUES)
        ops.assigned += args[i : i + 1] or ["MAPFILE"]
        ops.tainting = True
    elif name == "printf":
        opts, _ = _getopt(args, frozenset("v"))
        ops.assigned += [v for o, v in opts if o == "v"]
        ops.tainting = True
    elif name == "getopts":
        if len(args) >= 2:
            ops.assigned.append(args[1])
        ops.assigned.append("OPTARG")
        ops.tainting = True
    elif name == "wait":
        opts, _ = _getopt(args, frozenset("p"))
        ops.assigned += [v for o, v in opts if o == "p"]
    elif name == "let":
        ops.arith += args
    elif name == "unset":
        # `unset PATH; ls` runs ./ls: removing a blocked variable is changing it
        letters, i = _flags(args)
        if "f" not in letters:
            ops.assigned += args[i:]
    elif name == "coproc":
        if len(args) >= 2 and NAME.fullmatch(args[0]) and args[1] in ("{", "("):
            ops.assigned.append(args[0])
    else:  # test, [, [[
        for k, arg in enumerate(args):
            if arg in ("-v", "-R") and k + 1 < len(args):
                ops.names.append(args[k + 1])
            elif name == "[[" and arg in _ARITH_COMPARE:
                ops.arith += [a for a in (args[k - 1] if k else "", args[k + 1] if k + 1 <
                                          len(args) else "") if a]
    return ops


def var_name(operand: str) -> str:
    """The variable an operand names (`a[1]` names `a`)."""
    return operand.partition("[")[0]


def referenced(text: str) -> set[str]:
    """Names of the variables `$x`/`${x...}` in a piece of source text."""
    return {m.group(1) for m in _REF.finditer(text)}


def identifiers(text: str) -> set[str]:
    """Every name in an arithmetic expression (bare names are variables there)."""
    return set(_IDENT.findall(text))


def has_positional(text: str) -> bool:
    return _POSITIONAL.search(text) is not None


def arith_assigned(text: str) -> list[str]:
    """Variables an arithmetic expression assigns (`x=1`, `x[i]+=2`, `x++`, `--x`).
    Linear in the text: brackets are paired in one pass first."""
    closing: dict[int, int] = {}
    opened: list[int] = []
    for k, ch in enumerate(text):
        if ch == "[":
            opened.append(k)
        elif ch == "]" and opened:
            closing[opened.pop()] = k
    out: list[str] = []
    for m in _IDENT.finditer(text):
        end = m.end()
        while end < len(text) and text[end] in " \t":
            end += 1
        if end < len(text) and text[end] == "[":
            if end not in closing:
                continue
            end = closing[end] + 1
        if _ASSIGN_OP.match(text, end) or _PRE_INCREMENT.search(text, max(0, m.start() - 8),
                                                                  m.start()):
            out.append(m.group(1))
    return out


def expansion_parts(text: str) -> tuple[str, str, str]:
    """Split `${...}` into (prefix `!`/`#`/'', the name with its subscript, the rest)."""
    body = text[2:-1] if text.startswith("${") and text.endswith("}") else text
    prefix = body[:1] if body[:1] in ("!", "#") and len(body) > 1 else ""
    rest = body[len(prefix) :]
    m = NAME.match(rest) or _SPECIAL_PARAM.match(rest)
    if m is None:
        return prefix, "", rest
    end = m.end()
    if rest[end : end + 1] == "[":
        depth = 0
        for k in range(end, len(rest)):
            if rest[k] == "[":
                depth += 1
            elif rest[k] == "]":
                depth -= 1
                if depth == 0:
                    end = k + 1
                    break
        else:
            end = len(rest)
    return prefix, rest[:end], rest[end:]


# -- checks (the engine calls these with its findings) ------------------------------------


class Scope:
    """What one command line tells about its variables (see the module docstring)."""

    __slots__ = ("integer", "namerefs", "positional_tainted", "tainted")

    def __init__(self) -> None:
        self.tainted: set[str] = set()
        self.namerefs: set[str] = set()
        self.integer = False
        self.positional_tainted = False
        """`$1`... hold outside values (a `sh -c` payload, a function body)."""


def check_assignment(var: str, values: list[str], extra: tuple[str, ...], out: Findings,
                     how: str) -> None:
    """`var` is assigned (by `how`) one of `values` (DYN: unknown)."""
    if DYN in var:
        out.add("ask", "assign.dynamic-name",
                f"{how} assigns a variable whose name is not known before running")
        return
    for value in values or [DYN]:
        verdict = env_verdict(var, extra, None if DYN in value else value)
        if verdict is not None:
            out.add(verdict, "blocklist.env" if verdict == "deny" else "env.ask",
                    f"{how} assigns {var}, which makes programs load code or config "
                    "from where the command chose")
            return


def check_name_operand(value: str, scope: Scope, extra: tuple[str, ...], out: Findings, *,
                       assigned: bool, how: str) -> None:
    """An operand bash reads as a variable name (its subscript is evaluated, twice)."""
    for rule, reason in word_findings(value):
        out.add("deny", rule, f"blocked: {reason}")
    if DYN in value or "*" in value or "?" in value:  # unknown, or file names from a glob
        out.add("ask", "context.dynamic-name",
                f"{how}: a variable name that is not known before running")
        return
    var, _, index = value.partition("[")
    if index:
        check_arith_value(index, scope, extra, out, how=how)
    if assigned:
        check_assignment(var, [DYN], extra, out, how)


def check_arith_value(value: str, scope: Scope, extra: tuple[str, ...], out: Findings, *,
                      how: str, dynamic_asks: bool = True) -> None:
    """A computed value bash evaluates as arithmetic."""
    for rule, reason in word_findings(value):
        out.add("deny", rule, f"blocked: {reason}")
    if _SUBST.search(value):
        out.add("deny", "blocklist.subscript", f"blocked: {how} evaluates an expansion again")
    if dynamic_asks and DYN in value:
        out.add("ask", "context.dynamic-arithmetic",
                f"{how} evaluates a value that is not known before running")
    _arith_names(value.replace(DYN, " "), scope, extra, out, how)


def _arith_names(text: str, scope: Scope, extra: tuple[str, ...], out: Findings,
                 how: str) -> None:
    bad = sorted(identifiers(text) & scope.tainted)
    if bad:
        out.add("ask", "context.tainted-arithmetic",
                f"{how} evaluates the value of {bad[0]}, which comes from outside the "
                "command line (it can hold code in a subscript)")
    for var in arith_assigned(text):
        check_assignment(var, [DYN], extra, out, how)


def check_arith_source(text: str, scope: Scope, extra: tuple[str, ...], out: Findings,
                       values: list[str], *, how: str = "arithmetic") -> None:
    """Source text of an arithmetic context and its computed values (quotes removed)."""
    for value in [text, *values]:
        for rule, reason in word_findings(value):
            out.add("deny", rule, f"blocked: {reason} ({how})")
        if _SUBST.search(value):
            out.add("deny", "blocklist.subscript",
                    f"blocked: a substitution that {how} would expand again")
    names = identifiers(text) | referenced(text)
    if scope.positional_tainted and has_positional(text):
        names.add("1")
        scope.tainted.add("1")
    bad = sorted(names & scope.tainted)
    if bad:
        out.add("ask", "context.tainted-arithmetic",
                f"{how} evaluates the value of {bad[0]}, which comes from outside the "
                "command line (it can hold code in a subscript)")
    for var in arith_assigned(text):
        check_assignment(var, [DYN], extra, out, how)


def check_expansion(text: str, scope: Scope, extra: tuple[str, ...], out: Findings,
                    known: dict[str, tuple[str, ...]]) -> str | None:
    """`${...}`: indirection, `${x:=v}` assignments; returns the offset/length text of
    `${x:off:len}` (arithmetic) for the caller to check, else None."""
    prefix, target, rest = expansion_parts(text)
    var = var_name(target)
    if prefix == "!" and target and rest not in ("*", "@") and not target.endswith(
            ("[@]", "[*]")):
        if var in scope.tainted or (scope.positional_tainted and not NAME.fullmatch(var)):
            out.add("ask", "context.tainted-indirection",
                    f"${{!{var}}} uses the value of {var} (from outside the command line) "
                    "as a variable name")
        for value in known.get(var, ()):
            if value != DYN:
                check_name_operand(value, scope, extra, out, assigned=False,
                                   how=f"${{!{var}}}")
    if rest.startswith((":=", "=")) and var:
        if prefix == "!":  # `${!r:=v}` assigns the variable whose name r holds
            targets = [v for v in known.get(var, ()) if v != DYN]
            if var in scope.tainted or not targets:
                out.add("ask", "context.dynamic-name",
                        f"${{!{var}{rest[:2]}...}} assigns a variable named at run time")
            for target in targets:
                check_assignment(var_name(target), [DYN], extra, out, f"${{!{var}:=...}}")
        else:
            check_assignment(var, [DYN], extra, out, f"${{{var}{rest[:2]}...}}")
    if rest.startswith(":") and not rest.startswith((":-", ":=", ":+", ":?")):
        return rest[1:]
    return None
