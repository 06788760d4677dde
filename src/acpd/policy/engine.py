"""The judge: every simple command of a command line, under every rule; strictest wins.

`CompiledPolicy.judge(command, cwd=..., roots=...)` returns a `Decision`. A compiled policy is
immutable and safe to share between threads; build one with `compile_policy(policy)` (which
also checks every rule's `match`/`not_match` examples and raises PolicyError when one fails).
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Final

from acpd.policy import budget as budget_mod
from acpd.policy import contexts, pathtext
from acpd.policy import parse as parse_mod
from acpd.policy.blocklist import word_findings
from acpd.policy.cdphysical import cd_destination, cd_operands
from acpd.policy.commands import CommandJudge
from acpd.policy.decision import Decision, Findings, Verdict
from acpd.policy.expansion import MAX_WORDS, brace_words
from acpd.policy.gitobjects import read_finding as store_read
from acpd.policy.linectx import (
    Ctx,
    combos,
    glob_alternatives,
    input_in_payload,
    may_repeat,
    recursive,
    variants,
)
from acpd.policy.programtable import ProgramTable
from acpd.policy.rulematch import CompiledRule, compile_rule
from acpd.policy.rules import Policy, PolicyError, Trust
from acpd.policy.sandbox import (
    PathRules,
    close_decision,
    compile_patterns,
    has_parent_step,
    judge_path,
    normalized_roots,
    open_decision,
    physical,
)
from acpd.policy.text import check_text
from acpd.policy.variables import VariableJudge
from acpd.policy.words import DYN, Env, expand, simple_value
from acpd.policy.wrappers import DETACHING, WRAPPERS, unwrap

MAX_DEPTH: Final = 6
MAX_CWDS: Final = 32
"""Directories a line's `cd`s may reach that paths are judged from (more: ask)."""
MAX_COMMANDS: Final = 2000
MAX_PATH_CHARS: Final = 4096
_SAFE_REDIRECT_TARGET: Final = re.compile(r"^(\d+|-)$")
_CD_NAMES: Final = frozenset({"cd", "pushd", "builtin", "command"})


class CompiledPolicy(CommandJudge, VariableJudge):
    """An immutable, validated policy ready to judge commands."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.hash = policy.content_hash()
        self.settings = policy.policy
        self._by_name: dict[str, list[CompiledRule]] = {}
        self._glob_rules: list[CompiledRule] = []
        self.rules: tuple[CompiledRule, ...] = tuple(compile_rule(r) for r in policy.rules)
        for cr in self.rules:
            for name in cr.names:
                self._by_name.setdefault(name, []).append(cr)
            if cr.globs:
                self._glob_rules.append(cr)
        self.command_names = frozenset(self._by_name)
        self.blocked = frozenset(policy.blocklist.commands)
        self.blocked_env = policy.blocklist.env
        self.network = frozenset(policy.network.commands)
        self.allowed = None if policy.allowed_commands is None else frozenset(
            policy.allowed_commands)
        self.glob_rules = tuple(
            (re.compile(fnmatch.translate(g.pattern.lower()), re.DOTALL), g)
            for g in policy.glob_rules()
        )
        self.grammar = {k: frozenset(v.value_options) for k, v in policy.commands.items()}
        self._home = os.path.expanduser("~")
        self._cwd_norm: dict[str, str] = {}
        self._deny_globs = tuple((regex, g) for regex, g in self.glob_rules if g.action != "allow")
        self._path_cache: dict[tuple[tuple[str, ...], str], PathRules] = {}
        self.conditioned = frozenset(
            n for cr in self.rules if cr.rule.conditioned and cr.rule.verdict != "allow"
            for n in cr.names
        )
        self.table = ProgramTable(self._by_name, self._glob_rules, self.grammar, self.blocked,
                                  self.network, self.conditioned, self.allowed,
                                  (*WRAPPERS, *contexts.ASSIGNERS))

    # -- public ---------------------------------------------------------------------------

    def judge(self, command: str, *, cwd: str, roots: tuple[str, ...] | None = None,
              trust: Trust | None = None, home: str | None = None,
              sandboxed: bool = False, budget_ms: float | None = None) -> Decision:
        """Judge a bash command line that would run in `cwd` with workspace `roots`;
        `sandboxed`: it will run confined by the kernel sandbox (docs/policy.md).
        `budget_ms` (default `[policy] budget_ms`, 50): past it the decision stops and is at
        least ask (rule `input.over-budget`); never raises for any input."""
        budget = self.settings.budget_ms if budget_ms is None else budget_ms
        if not parse_mod.ready():
            parse_mod.warm()  # loading tree-sitter (first call only) is not the command's cost
        paused = len(command) > budget_mod.GC_PAUSE_CHARS
        if paused:  # (before the decision's state is made, and resumed after it is gone)
            budget_mod.pause_gc()
        previous = budget_mod.start(budget)
        memo = open_decision()
        try:
            out = self._judge(command, cwd, roots, trust, home, None, sandboxed=sandboxed)
            if sandboxed and out.verdict == "allow" and (trust or self.settings.trust) not in (
                    "trusted", "untrusted"):
                out = self._unmasked(out, command, cwd, roots, trust, home)
        finally:
            close_decision(memo)
            budget_mod.restore(previous)
            if paused:
                budget_mod.resume_gc()
        return Decision(out.verdict, tuple(out.reasons), tuple(out.rules), self.hash)

    def rule_matches(self, rule: CompiledRule, command: str, cwd: str,
                     roots: tuple[str, ...]) -> bool:
        """Does `rule` match some simple command of `command` (used for rule examples)?"""
        out = self._judge(command, cwd, roots, "trusted", None, rule)
        return rule.rule.id in out.rules

    # -- internals ------------------------------------------------------------------------

    def _unmasked(self, out: Findings, command: str, cwd: str, roots: tuple[str, ...] | None,
                  trust: Trust | None, home: str | None) -> Findings:
        """A sandboxed allow in a repository that tracks a deny_read path: judged again as
        unsandboxed (gitcopies.py: the sandbox cannot mask git's copy of the file)."""
        from acpd.policy.gitcopies import committed_secret

        norm = self._norm_cwd(cwd)
        rules = self._path_rules(normalized_roots(roots or (norm,)), home or self._home)
        why = committed_secret(norm, rules)
        if why is None:
            return out
        again = self._judge(command, cwd, roots, trust, home, None, sandboxed=False)
        if again.verdict != "allow":
            again.add("ask", "sandbox.committed-secret", why)
        return again

    def _path_rules(self, roots: tuple[str, ...], home: str) -> PathRules:
        key = (roots, home)
        rules = self._path_cache.get(key)
        if rules is None:
            p = self.policy.paths
            with budget_mod.uncounted():  # set-up for the workspace, not the command's work
                rules = PathRules(
                    roots,
                    compile_patterns(p.deny_read, home), compile_patterns(p.deny_write, home),
                    compile_patterns(p.read_roots, home), compile_patterns(p.write_roots, home),
                    p.outside_read, p.outside_write)
            if len(self._path_cache) > 64:
                self._path_cache.clear()
            self._path_cache[key] = rules
        return rules

    def _judge(self, command: str, cwd: str, roots: tuple[str, ...] | None,
               trust: Trust | None, home: str | None, only: CompiledRule | None, *,
               sandboxed: bool = False) -> Findings:
        out = Findings()
        home = home or self._home
        cwd = self._norm_cwd(cwd)
        level: Trust = trust or self.settings.trust
        ctx = Ctx(cwd, roots or (cwd,), home, level, self._path_rules, out, only_rule=only,
                  sandboxed=sandboxed, line=command)
        made = 0  # words brace expansion makes: the most of any reading of the line
        try:
            if not check_text(command, self.settings.max_command_bytes, out):
                return out
            sources = [command] if command.isascii() and "\\\n" not in command else \
                variants(command)
            for k, source in enumerate(sources):
                ctx.cwds = [cwd]
                if k:
                    ctx.scope = contexts.Scope()
                before = budget_mod.words_made()
                self._source(source, ctx, 0)
                made = max(made, budget_mod.words_made() - before)
        except budget_mod.OverBudget:
            out.add("ask", "input.over-budget", "the command took too long to judge (over the "
                    f"{self.settings.budget_ms} ms budget); it was not found safe")
        except (budget_mod.TooComplex, RecursionError) as exc:
            out.add("ask", "input.too-complex", f"the command is too complex to judge ({exc})")
        except OSError as exc:  # a file-system fact the judge could not read: a verdict
            _fs_error(out, exc)
        try:
            stale = ctx.rewritten()
        except (OSError, ValueError) as exc:  # a path that cannot be resolved (EACCES, NUL)
            stale = ("?", f"a place it relies on could not be looked at ({exc})")
        if stale is not None:
            out.add("ask", "line.rewrites-checked-file", f"the line writes {stale[0]!r}, "
                    f"which the judge read as it is now: {stale[1]}")
        if made > MAX_WORDS:  # even sandboxed: the sandbox does not bound memory
            out.add("ask", "input.expansion", f"brace expansion makes {made:,} words (over "
                    f"{MAX_WORDS:,}), which bash builds in memory before the command runs")
        if only is None and self._deny_globs:
            text = command.lower()
            for regex, rule in self._deny_globs:
                if regex.match(text):
                    out.add(rule.action, f"permissions.bash:{rule.pattern}",
                            f"command matches {rule.action} pattern {rule.pattern!r}")
        if level == "untrusted" and out.verdict == "ask":
            out.add("deny", "trust.untrusted", "untrusted workspace: what would ask is denied")
        return out

    def _norm_cwd(self, cwd: str) -> str:
        if not cwd.startswith("/"):  # relative: depends on the process's cwd, never cached
            return pathtext.normpath(os.path.abspath(cwd))
        norm = self._cwd_norm.get(cwd)
        if norm is None:
            norm = pathtext.normpath(cwd)
            if len(self._cwd_norm) > 256:
                self._cwd_norm.clear()
            self._cwd_norm[cwd] = norm
        return norm

    def _source(self, source: str, ctx: Ctx, depth: int) -> None:
        out = ctx.out
        if depth > MAX_DEPTH:
            out.add("deny", "input.too-deep", "shell payloads nested too deeply")
            return
        budget_mod.check()
        try:
            script = parse_mod.parse_memo(source)
        except (budget_mod.OverBudget, budget_mod.TooComplex):
            raise
        except Exception as exc:  # the parser must never let a command through
            out.add("deny", "input.parser-failed", f"parser failed: {type(exc).__name__}")
            return
        if script.too_big or len(script.commands) > MAX_COMMANDS:
            out.add("deny", "input.too-many-nodes", "command too complex to judge")
            return
        if "{" in source:  # (every word is text of the source: without a brace, none expands)
            budget_mod.note_words(brace_words(script, ctx.home))
        if not ctx.repeats and (script.functions or script.for_vars or (
                source != ctx.line and may_repeat(source))):  # (the line itself: looked at)
            ctx.repeats = True  # a payload's loop: `bash -c 'f'or' ...'` reads as one
        if script.has_error:
            verdict: Verdict = "deny" if ctx.trust == "untrusted" else self.settings.parse_error
            out.add(verdict, "input.parse-error", "the command does not parse cleanly")
        for rule_id, reason in script.blocked:
            out.add("deny", rule_id, f"blocked: {reason}")
        env = self._env(script, ctx)
        self._scope(script, env, ctx, depth)
        for k, (name, value) in enumerate(script.assigns):
            if not k & 63:
                budget_mod.check()
            self._assignment(name, value, env, ctx)
        for name in script.for_vars:
            contexts.check_assignment(name, [DYN], self.blocked_env, out, "for/select")
            if name in ctx.scope.namerefs:
                out.add("ask", "context.nameref-loop", f"a loop over the name reference {name}")
        for k, (kind, text, fn) in enumerate(script.evals):
            if not k & 63:
                budget_mod.check()
            self._eval(kind, text, fn, env, ctx, depth)
        if script.functions:
            ctx.functions |= set(script.functions)
        if script.functions and recursive(script.functions):
            out.add("deny", "blocklist.recursive-function",
                    "a function calls itself (fork bomb shape)")
        self._seed_cwds(script, env, ctx)
        for cmd in script.commands:
            try:
                self._simple(cmd, env, ctx, depth)
            except OSError as exc:  # the other commands of the line are still judged
                _fs_error(ctx.out, exc)

    def _seed_cwds(self, script: parse_mod.Script, env: Env, ctx: Ctx) -> None:
        """Every directory a `cd`/`pushd` of this line may reach, before any command is
        judged: the parse order of a list is not always bash's (tree-sitter hangs the
        redirect of `cd .git && echo x > config` on the whole list), so each path is judged
        from all of them (a superset; `cd a && cd b` reaches a, b and a/b). Targets are the
        words' values, globs expanded (`cd .gi*`)."""
        for cmd in script.commands:
            words = cmd.words
            if not words or (words[0] not in _CD_NAMES and "'" not in words[0]
                             and '"' not in words[0]):
                continue  # its value (if it has one) is itself: not a cd
            while len(words) > 1 and simple_value(words[0]) in ("builtin", "command"):
                words = words[1:]
            if len(words) < 2 or simple_value(words[0]) not in ("cd", "pushd"):
                continue
            targets: dict[tuple[str, bool], None] = {}
            for argv in combos(words, env, ctx):
                physical = False  # `cd -P lnk/..`: links resolved before `..` (cdphysical)
                if argv[0] == "cd":
                    operands, physical = cd_operands(argv[1:])
                else:
                    operands = [w for w in argv[1:] if w == "-" or not w.startswith("-")]
                if operands and DYN not in operands[0] and operands[0] != "-":
                    targets[operands[0], physical] = None
            for target, physical in targets:
                for base in list(ctx.cwds):
                    new = cd_destination(base, target, physical)
                    if new in ctx.cwds:
                        continue
                    if len(ctx.cwds) >= MAX_CWDS:
                        ctx.out.add("ask", "input.too-complex",
                                    f"the line changes directory more than {MAX_CWDS} ways")
                        return
                    ctx.cwds.append(new)

    def _simple(self, cmd: parse_mod.SimpleCommand, env: Env, ctx: Ctx, depth: int) -> None:
        outer = ctx.enter_command()  # its writes are its own (linectx `_own`)
        try:
            self._simple_command(cmd, env, ctx, depth)
        finally:
            ctx.leave_command(outer)

    def _simple_command(self, cmd: parse_mod.SimpleCommand, env: Env, ctx: Ctx,
                        depth: int) -> None:
        budget_mod.check()
        if cmd.background and not ctx.sandboxed and ctx.only_rule is None:
            ctx.out.add("ask", "escape.background", "a background job (`&`) can outlive the "
                        "command and its kill")
        for red in cmd.redirects:
            if red.kind != "file" or red.target is None:
                continue
            if red.op in (">&", "<&") and _SAFE_REDIRECT_TARGET.match(red.target):
                continue
            mode = "read" if red.op in ("<", "<&") else "write"
            exp = expand(red.target, env, ctx.home)
            alternatives = glob_alternatives(exp.alternatives, ctx) if exp.glob else \
                exp.alternatives  # bash expands a redirect's glob (one match, or an error)
            for alt in alternatives:
                for target in alt or ("",):
                    self._word_checks(target, ctx)
                    self._path(target, mode, ctx, redirect=True)
                    if red.op == "<>":
                        self._path(target, "read", ctx, redirect=True)
        words = cmd.words
        if not words:
            return
        if cmd.plain:  # each word is its own one value, and none is a glob
            self._argv(words, ctx, depth, in_function=cmd.function)
            return
        values = [simple_value(w) for w in words]
        if None not in values:  # every word has exactly one value: argv is known
            if len(values) > 1:
                rest = "".join(values[1:])  # type: ignore[arg-type]
                if "*" in rest or "?" in rest or "[" in rest:
                    ctx.glob_state().literal.update(values[1:])  # type: ignore[arg-type]
            self._argv(values, ctx, depth, in_function=cmd.function)  # type: ignore[arg-type]
            return
        for argv in combos(words, env, ctx):
            if not argv:
                ctx.out.add("ask", "command.dynamic", "the command name expands to nothing")
                continue
            self._argv(argv, ctx, depth, in_function=cmd.function)

    def _word_checks(self, word: str, ctx: Ctx) -> None:
        for rule_id, reason in word_findings(word):
            ctx.out.add("deny", rule_id, f"blocked: {reason}")

    def _path(self, raw: str, mode: str, ctx: Ctx, *, redirect: bool = False,
              entry: str | None = None, made: str | None = None) -> None:
        if ctx.only_rule is not None:
            return
        budget_mod.check()
        if len(raw) > MAX_PATH_CHARS:  # no file has such a name (ENAMETOOLONG)
            ctx.out.add("ask", "path.too-long", f"a {mode} path of {len(raw)} characters")
            return
        literal = ctx.globs is not None and raw in ctx.globs.literal
        if "\x00" not in raw:  # (a NUL: judge_path denies it)
            self._relies(raw, mode, ctx, redirect, entry, made)
        if mode != "read" and made != "exposed":  # (a link's target: judged, not written)
            ctx.wrote(raw, made or ("file" if redirect else "entry" if entry else "data"))
        for cwd in ctx.cwds:
            hit = judge_path(raw, mode, cwd, ctx.paths, redirect=redirect, literal=literal,
                             entry=entry)
            if hit is not None:
                ctx.out.add(*hit)
            if mode == "read" and entry is None:  # git's object store (gitobjects)
                hit = store_read(raw, cwd, ctx.paths)
                if hit is not None:
                    ctx.out.add(*hit)

    def _relies(self, raw: str, mode: str, ctx: Ctx, redirect: bool, entry: str | None,
                made: str | None) -> None:
        """What judging `raw` takes as it is now, which another command of the line may
        change (linectx `rewritten`): what each `..` goes up from; for a read or a write that
        follows the path, the place itself, and with it every directory above and every link
        its resolution meets (`ln -s gd l && cp x l/config`, `mv lnk x && cat x`), and, for a
        link there now, where it points, hop by hop (`n -> g3/config` with `ln -s gd g3`);
        for a write that acts on the entry itself (rm, mv, ln's new name), the directory it
        is in."""
        since = ctx.mark() if mode == "read" or redirect or ctx.mine is None else ctx.mine
        # Under the sandbox a path that goes through a link the line makes or moves reaches
        # no denied file (masked), no git code (read-only) and nothing outside: only the
        # directory a write is made in counts there.
        follows = entry is None and made != "dir" and not ctx.sandboxed
        for cwd in ctx.cwds:
            joined = raw if raw.startswith("/") else pathtext.join(cwd, raw)
            path = _rely_steps(joined, raw, ctx, since)
            if follows:  # what it is now, and every directory above (linectx `_probes`)
                how = "read" if mode == "read" else "written"
                ctx.rely_tree(path, f"{raw} is {how} where it points now", since, below=False,
                              leaf=True)  # (a checkout may put a link there: at the top too)
                _rely_link(path, raw, ctx, since)
            elif mode != "read":  # the entry itself (a link made, removed, renamed)
                parent = pathtext.dirname(path)
                ctx.rely_tree(parent, f"{raw} is written through {parent} as it is now",
                              since, below=False)

    def _argv(self, argv: list[str], ctx: Ctx, depth: int, in_function: str | None) -> None:
        out = ctx.out
        if not argv:
            return
        joined = " ".join(argv)
        if "[" in joined or "/dev/" in joined:  # (neither holds a space: one word has it)
            for k, word in enumerate(argv):
                if k & 255 == 255:  # (`_simple` checked just before the first)
                    budget_mod.check()
                if "[" in word or "/dev/" in word:
                    self._word_checks(word, ctx)
            if len(argv) > 1:
                # tree-sitter can split what bash reads as one word (`a[\$\(id\ x\)]`)
                self._word_checks(joined, ctx)
        first = argv[0]
        if first in contexts.ASSIGNERS:
            self._builtin(argv, ctx)
        if (first.rpartition("/")[2] if "/" in first else first) not in WRAPPERS:
            self._command(argv, ctx, depth)  # what unwrap would hand back unchanged
            return
        res = unwrap(argv)
        for k, layer in enumerate(res.chain):
            if layer in self.blocked:
                out.add("deny", f"blocklist.command.{layer}", f"blocked command {layer}")
            if layer in DETACHING and not ctx.sandboxed and ctx.only_rule is None:
                out.add("ask", "escape.detach", f"{layer} lets the command outlive its kill")
            if ctx.only_rule is None and (k or "/" not in first):
                self._program_lookup(layer, ctx)  # a wrapper is looked up on PATH too
        for verdict, rule_id, reason in res.findings:
            out.add(verdict, rule_id, reason)
        for name, value in res.assigns:
            contexts.check_assignment(name, [value], self.blocked_env, out, f"{first} {name}=")
        if res.argv and res.argv[0] in contexts.ASSIGNERS and res.argv is not argv:
            self._builtin(res.argv, ctx)
        if res.payloads and input_in_payload(argv, res.chain):
            out.add("ask", "wrapper.dynamic", "the shell script is built from input at run "
                    "time (a replace string of xargs or parallel)")
        for payload in res.payloads:
            self._source(payload, ctx, depth + 1)
        for inner in res.extra_argvs:
            if depth < MAX_DEPTH:
                self._argv(inner, ctx, depth + 1, in_function)
        for r in res.reads:
            self._path(r, "read", ctx)
        for w in res.writes:
            self._path(w, "write", ctx)
        if res.argv:
            self._command(res.argv, ctx, depth)


MAX_LINK_HOPS: Final = 40
"""Links followed from a path (the kernel's own limit)."""


def _rely_steps(joined: str, raw: str, ctx: Ctx, since: int) -> str:
    """Rely on what each `..` of the absolute `joined` goes up from (`src/../l/../x`: l
    too); return where it goes now (`l/../x` with l a link now goes where the kernel takes
    it: sandbox.physical)."""
    if not has_parent_step(joined):
        return pathtext.normpath(joined)
    parts = joined.split("/")
    for k, part in enumerate(parts):
        if part == ".." and k:
            above = pathtext.normpath("/".join(parts[:k]) or "/")
            ctx.rely_tree(above, f"{raw} goes up (..) from {above} as it is now", since,
                          below=False)
    return physical(joined)


def _rely_link(path: str, raw: str, ctx: Ctx, since: int) -> None:
    """A path that is a link now is judged where it points now: rely on the directory of
    each hop (and what its `..` go up from)."""
    for _ in range(MAX_LINK_HOPS):
        try:
            target = os.readlink(path)
        except (OSError, ValueError):
            return  # not a link (or missing): nothing more is followed
        joined = target if target.startswith("/") else pathtext.join(pathtext.dirname(path),
                                                                     target)
        path = _rely_steps(joined, raw, ctx, since)
        parent = pathtext.dirname(path)
        ctx.rely_tree(parent, f"{raw} is a link through {parent} as it is now", since,
                      below=False)


def _fs_error(out: Findings, exc: OSError) -> None:
    out.add("ask", "input.fs-error", "the judge could not read the file system "
            f"({exc.strerror or exc}: {exc.filename!r}); the command was not found safe")


def _import_lazy() -> None:
    """Modules the judge imports where first needed (import cycles): loaded with the policy,
    so that a first decision's budget is not spent on imports."""
    import acpd.policy.gitcopies
    import acpd.policy.hardlinks
    import acpd.policy.hookdirs  # noqa: F401


def compile_policy(policy: Policy, *, check_examples: bool = True) -> CompiledPolicy:
    """Compile and validate; every rule's `match`/`not_match` examples must hold."""
    from acpd.policy.examples import example_errors

    _import_lazy()
    compiled = CompiledPolicy(policy)
    # The path patterns (regexes) compiled now, not in the first decision's budget: the
    # same compiled lists serve every workspace root.
    compiled._path_rules(("/",), compiled._home)
    if check_examples:
        errors = example_errors(compiled)
        if errors:
            raise PolicyError("; ".join(errors[:10]))
    return compiled
