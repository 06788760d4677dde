"""Variables and the contexts where bash evaluates text again: the values a line gives its
variables (`_env`), which of them hold outside input (`_scope`), arithmetic and `${...}`
contexts (`_eval`), assignments and the builtins that assign (`_builtin`). A mixin of
`CompiledPolicy` (engine.py); the checks themselves live in `contexts`."""

from __future__ import annotations

from typing import Final

from mypy_extensions import trait

from acpd.policy import budget as budget_mod
from acpd.policy import contexts
from acpd.policy import parse as parse_mod
from acpd.policy.blocklist import word_findings
from acpd.policy.linectx import MAX_ARGV_COMBOS, Ctx, glob_alternatives
from acpd.policy.words import DYN, Env, expand, expand_segments, simple_value

_SCOPE_NAMES: Final = frozenset({"command", "builtin", *contexts.ASSIGNERS})


@trait  # a mixin of CompiledPolicy: compiled (mypyc), a class of two bases needs it
class VariableJudge:
    """The variable side of judging a line; `blocked_env` is set by `CompiledPolicy`."""

    blocked_env: tuple[str, ...]

    def _env(self, script: parse_mod.Script, ctx: Ctx) -> Env:
        base: Env = {"HOME": (ctx.home,), "PWD": (ctx.cwd,), "IFS": (" \t\n",)}
        if not script.assigns and not script.for_vars:
            return base
        env: Env = dict(base)
        for _round in range(3):  # Y=$X after X=rm: a few rounds reach the fixpoint
            budget_mod.check()
            values: dict[str, list[str]] = {}
            for k, (name, value) in enumerate(script.assigns):
                if not k & 63:
                    budget_mod.check()
                vals = values.setdefault(name, [DYN])
                for alt in expand(value, env, ctx.home).alternatives:
                    vals.append(" ".join(alt))
            for name, words in script.for_vars.items():
                vals = values.setdefault(name, [])
                for j, word in enumerate(words):
                    if not j & 63:  # one name can hold 6000 words (`for i in a b c` x 2000)
                        budget_mod.check()
                    exp = expand(word, env, ctx.home)
                    alternatives = glob_alternatives(exp.alternatives, ctx) if exp.glob else \
                        exp.alternatives  # `for f in *`: what the glob matches
                    for alt in alternatives:
                        vals.extend(alt)
            nxt: Env = dict(base)
            for name, vals in values.items():
                kept = tuple(dict.fromkeys(vals))
                # past the bound the rest is unknown, never dropped (`for f in 1 ... 17 .env`)
                nxt[name] = kept if len(kept) <= MAX_ARGV_COMBOS else (
                    *kept[: MAX_ARGV_COMBOS - 1], DYN)
            if nxt == env:
                break
            env = nxt
        return env

    def _scope(self, script: parse_mod.Script, env: Env, ctx: Ctx, depth: int) -> None:
        """Which variables hold values from outside the command line (see `contexts`)."""
        scope = ctx.scope
        if depth > 0:
            scope.positional_tainted = True
        tainted = scope.tainted
        for k, cmd in enumerate(script.commands):
            if k & 255 == 255:
                budget_mod.check()
            if cmd.function is not None:
                scope.positional_tainted = True
            words = cmd.words
            if not words or len(words) > 256:  # `_builtin` asks for so many operands
                continue
            name = words[0]
            if name not in _SCOPE_NAMES and "'" not in name and '"' not in name:
                continue  # its value (if it has one) is itself: no builtin that assigns
            first = simple_value(name)
            while first in ("command", "builtin") and len(words) > 1:
                words = words[1:]
                first = simple_value(words[0])
            if first not in contexts.ASSIGNERS:
                continue
            argv = [first, *(expand(w, env, ctx.home).alternatives[0][0]
                             if len(expand(w, env, ctx.home).alternatives[0]) == 1 else DYN
                             for w in words[1:])]
            ops = contexts.builtin_operands(argv)
            scope.integer = scope.integer or ops.integer
            scope.namerefs.update(contexts.var_name(n) for n in ops.namerefs)
            if ops.tainting:
                tainted.update(contexts.var_name(a) for a in ops.assigned if DYN not in a)
        for name, words in script.for_vars.items():
            for j, w in enumerate(words):  # one name can hold 6000 words
                if not j & 63:
                    budget_mod.check()
                exp = expand(w, env, ctx.home)
                if exp.dynamic or exp.glob:
                    tainted.add(name)
                    break
        for _round in range(4 if script.assigns else 0):  # y=$x after read x: a few rounds
            budget_mod.check()  # reach the fixpoint
            grew = False
            for k, (name, value) in enumerate(script.assigns):
                if not k & 255:
                    budget_mod.check()
                if name in tainted:
                    continue
                refs = contexts.referenced(value)
                if refs & tainted or "`" in value or "$(" in value or (
                        scope.positional_tainted and contexts.has_positional(value)):
                    tainted.add(name)
                    grew = True
            if not grew:
                break

    def _eval(self, kind: str, text: str, fn: str | None, env: Env, ctx: Ctx,
              depth: int) -> None:
        """A context where bash evaluates text again (arithmetic, subscripts, `${...}`)."""
        scope = ctx.scope
        if fn is not None:
            scope.positional_tainted = True
        if kind == "expansion":
            arith = contexts.check_expansion(text, scope, self.blocked_env, ctx.out, env)
            if arith is None:
                return
            text = arith
        values = [" ".join(alt) for alt in expand_segments(text, env, ctx.home).alternatives]
        contexts.check_arith_source(text, scope, self.blocked_env, ctx.out, values)

    def _assignment(self, name: str, value: str, env: Env, ctx: Ctx) -> None:
        var = contexts.var_name(name)
        alternatives = expand(value, env, ctx.home).alternatives
        values = [" ".join(alt) for alt in alternatives]
        contexts.check_assignment(var, values, self.blocked_env, ctx.out, "an assignment")
        for alt in alternatives:
            for word in alt:
                for rule_id, reason in word_findings(word):
                    ctx.out.add("deny", rule_id, f"blocked: {reason}")
        if ctx.scope.integer:  # `declare -i x` makes every `x=...` arithmetic
            contexts.check_arith_source(value, ctx.scope, self.blocked_env, ctx.out, values,
                                        how="an integer assignment")
        if var in ctx.scope.namerefs:
            for v in values:
                contexts.check_name_operand(v, ctx.scope, self.blocked_env, ctx.out,
                                            assigned=True, how=f"the name reference {var}")

    def _builtin(self, argv: list[str], ctx: Ctx) -> None:
        """A builtin that assigns, names or evaluates variables (see `contexts`)."""
        if len(argv) > 256:
            ctx.out.add("ask", "context.too-many-operands",
                        f"{argv[0]} with {len(argv) - 1} operands is not judged one by one")
            return
        ops = contexts.builtin_operands(argv)
        scope, extra, out, name = ctx.scope, self.blocked_env, ctx.out, argv[0]
        for operand in ops.assigned:
            contexts.check_name_operand(operand, scope, extra, out, assigned=True, how=name)
        for operand in ops.names:
            contexts.check_name_operand(operand, scope, extra, out, assigned=False, how=name)
        for value in ops.name_values:
            contexts.check_name_operand(value, scope, extra, out, assigned=True,
                                        how=f"{name} -n")
        for value in ops.arith:
            contexts.check_arith_value(value, scope, extra, out, how=name,
                                       dynamic_asks=name != "[[")
