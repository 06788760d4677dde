"""A policy rule compiled for matching: names, globs and argument patterns as one regex each,
and the test of one simple command (its argv already scanned) against it."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from acpd.policy import globmatch
from acpd.policy.argspec import Scan, option_matches, scan
from acpd.policy.checks import CHECKS, CheckContext
from acpd.policy.decision import Verdict
from acpd.policy.rules import Rule
from acpd.policy.words import DYN

GLOB: Final = re.compile(r"[*?]|\[.*\]")


OptionTest = tuple[str, Callable[[str], object] | None]
"""An option spec and, unless it is a plain name (`--long`, `-x`), its compiled glob."""


@dataclass(frozen=True, slots=True)
class CompiledRule:
    rule: Rule
    names: frozenset[str]
    globs: tuple[str, ...]
    subcommands: tuple[tuple[str, ...], ...]
    args_re: re.Pattern[str] | None
    any_arg_re: re.Pattern[str] | None
    argv_re: re.Pattern[str] | None
    heads: frozenset[str] | None
    """First words of the subcommands (None: no subcommand condition, or an empty one)."""
    needs_options: bool
    """Its `options` are all looked up among scanned options: no option, no match."""
    unconditional: bool
    """Names only, no condition on the arguments: it matches every command it names."""
    id: str
    verdict: Verdict
    reason: str
    """What a finding of the rule says (`reason`, else "rule ID")."""
    modeled: bool
    trusted_only: bool
    """`trust = "trusted"`."""
    check: str | None
    no_args: bool
    global_only: bool
    # (the rule's fields the judge reads, copied: a pydantic model's attribute costs a
    # generic look-up from compiled code, a field here a load)
    option_tests: tuple[OptionTest, ...] = ()
    """`options`, each with its compiled glob matcher (built once per policy)."""
    unless_tests: tuple[OptionTest, ...] = ()
    """`unless_options`, the same way."""


def _option_tests(specs: tuple[str, ...] | list[str]) -> tuple[OptionTest, ...]:
    return tuple((spec, None if spec.startswith("--") or len(spec) == 2 else
                  globmatch.matcher(spec)) for spec in specs)


def alternation(globs: tuple[str, ...], lower: bool = False) -> re.Pattern[str] | None:
    if not globs:
        return None
    parts = [fnmatch.translate(g.lower() if lower else g) for g in globs]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.DOTALL)


def compile_rule(rule: Rule) -> CompiledRule:
    names = frozenset(c for c in rule.commands if not GLOB.search(c))
    globs = tuple(c for c in rule.commands if GLOB.search(c))
    subs = tuple(tuple(s.split()) for s in rule.subcommands)
    heads = frozenset(sub[0] for sub in subs) if subs and all(subs) else None
    needs_options = bool(rule.options) and all(
        o.startswith("--") or len(o) == 2 for o in rule.options)
    unconditional = not (subs or rule.no_args or rule.unless_options or rule.options
                         or rule.args or rule.any_arg or rule.argv or rule.check)
    return CompiledRule(rule, names, globs, subs, alternation(rule.args),
                        alternation(rule.any_arg, lower=True), alternation(rule.argv), heads,
                        needs_options, unconditional, rule.id, rule.verdict,
                        rule.reason or f"rule {rule.id}", rule.modeled, rule.trust == "trusted",
                        rule.check, rule.no_args, rule.global_only,
                        _option_tests(rule.options), _option_tests(rule.unless_options))


def _has_option(test: OptionTest, args: list[str], sc: Scan) -> bool:
    spec, match = test
    if match is None:
        return bool(sc.options) and any(option_matches(spec, name) for name, _ in sc.options)
    stop = args.index("--") if "--" in args else len(args)
    return any(match(a.partition("=")[0]) for a in args[:stop])


def _global_prefix(args: list[str], vopts: frozenset[str]) -> list[str]:
    """The arguments before the first positional (a command's global options)."""
    k = 0
    while k < len(args):
        arg = args[k]
        if arg == "--" or not arg.startswith("-") or arg == "-" or arg == DYN:
            break
        if "=" not in arg and (arg in vopts or (len(arg) == 2 and arg in vopts)):
            k += 2
        else:
            k += 1
    return args[:k]


def rule_matches(cr: CompiledRule, base: str, args: list[str], sc: Scan,
                  cctx: CheckContext | None, vopts: frozenset[str]) -> bool:
    pos: tuple[str, ...] = sc.positionals
    rest = pos
    if cr.subcommands:
        for sub in cr.subcommands:
            if pos[: len(sub)] == sub:
                rest = pos[len(sub) :]
                break
        else:
            return False
    if cr.no_args and (rest or (sc.options and not cr.subcommands)):
        return False
    if cr.unless_tests and any(_has_option(t, args, sc) for t in cr.unless_tests):
        return False
    if cr.option_tests:
        if cr.global_only:
            glob_args = _global_prefix(args, vopts)
            gsc = scan(glob_args, vopts)
            if not any(_has_option(t, glob_args, gsc) for t in cr.option_tests):
                return False
        elif not any(_has_option(t, args, sc) for t in cr.option_tests):
            return False
    if cr.args_re is not None and not any(cr.args_re.match(a) for a in rest):
        return False
    if cr.any_arg_re is not None and not any(cr.any_arg_re.match(a.lower()) for a in args):
        return False
    if cr.argv_re is not None and not cr.argv_re.match(" ".join(args)):
        return False
    if cr.check:
        assert cctx is not None
        return bool(CHECKS[cr.check](base, args, cctx))
    return True
