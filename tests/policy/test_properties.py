"""Hypothesis: overlays only tighten; the parser/judge never crashes or hangs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy, compile_policy
from acpd.policy.overlays import Overlay, ShellOverlay, merge
from acpd.policy.rules import Rule

NAMES = ["ls", "cat", "git", "rm", "echo", "curl", "python3", "sed", "find", "make", "cargo",
         "npm", "tar", "cp", "xargs", "env", "sh", "grep", "awk", "truncate", "unknown-tool"]
ARGS = ["-la", "-f", "--force", "push", "log", "status", "-c", "'x y'", "src/", ".env",
        "/etc/passwd", "~/.ssh/id_rsa", "$HOME", "$X", "*.py", "build", "-exec", "{}", "\\;",
        "origin", "+main", "-n", "1,5p", "'s/a/b/e'", "--output=x", "-m", "pytest", "--"]
OPS = [" && ", " || ", " | ", "; ", " & ", "\n"]

simple = st.builds(
    lambda prefix, name, args, redirect: prefix + name + "".join(" " + a for a in args)
    + redirect,
    st.sampled_from(["", "env ", "X=1 ", "nohup ", "time ", "sudo ", "command "]),
    st.sampled_from(NAMES),
    st.lists(st.sampled_from(ARGS), max_size=4),
    st.sampled_from(["", " > out.txt", " > /tmp/x", " < .env", " 2>&1", " >> ~/.bashrc"]),
)
commands = st.builds(
    lambda first, rest: first + "".join(op + cmd for op, cmd in rest),
    simple, st.lists(st.tuples(st.sampled_from(OPS), simple), max_size=3),
)
wrapped = st.one_of(commands, commands.map(lambda c: f"sh -c {c!r}"),
                    commands.map(lambda c: "(" + c + ")"))

rule = st.builds(
    lambda i, verdict, names, options, args: Rule(
        id=f"r{i}", verdict=verdict, commands=tuple(names), options=tuple(options),
        args=tuple(args)),
    st.integers(0, 10_000), st.sampled_from(["deny", "ask"]),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
    st.lists(st.sampled_from(["-f", "--force", "-c", "-exec", "--output"]), max_size=2),
    st.lists(st.sampled_from(["push", "*", "src/*", "+*"]), max_size=1),
)
overlay = st.builds(
    lambda i, blocked, allowed, rules, deny_read, net: Overlay(
        f"p{i}", f"/plugins/p{i}/plugin.toml", ShellOverlay(
            blocked_commands=tuple(blocked), allowed_commands=allowed,
            rules=tuple({r.id: r for r in rules}.values()), deny_read=tuple(deny_read),
            network_commands=tuple(net))),
    st.integers(0, 99),
    st.lists(st.sampled_from(NAMES), max_size=3),
    st.one_of(st.none(), st.lists(st.sampled_from(NAMES), max_size=8).map(tuple)),
    st.lists(rule, max_size=3),
    st.lists(st.sampled_from(["**/*.txt", "src/**", "**/build", "/tmp/**"]), max_size=2),
    st.lists(st.sampled_from(["git", "python3", "npm"]), max_size=2),
)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cmd=wrapped, overlays=st.lists(overlay, max_size=3, unique_by=lambda o: o.name),
       trust=st.sampled_from(["untrusted", "provisional", "trusted"]))
def test_overlays_never_loosen(reference: CompiledPolicy, workspace: str, cmd: str,
                               overlays: list[Overlay], trust: str) -> None:
    merged = compile_policy(merge(reference.policy, overlays), check_examples=False)
    before = reference.judge(cmd, cwd=workspace, trust=trust)  # type: ignore[arg-type]
    after = merged.judge(cmd, cwd=workspace, trust=trust)  # type: ignore[arg-type]
    assert RANK[after.verdict] >= RANK[before.verdict], (cmd, before, after)


SHELL_ALPHABET = st.sampled_from([*"abcrm -$(){}[]'\"`\\|&;<>!*?~=#\n\t.,:/%@^+0123456789",
                                  "\u202e", "\u00a0", "\u200b", "é", "$(", "<<<", "<<EOF\n",
                                  "${", "$[", "$'", "\\\n", "((", "))", "[[", "]]"])


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=st.lists(SHELL_ALPHABET, max_size=120).map("".join))
def test_fuzz_judge_never_crashes(reference: CompiledPolicy, workspace: str, text: str) -> None:
    d = reference.judge(text, cwd=workspace)
    assert d.verdict in ("allow", "ask", "deny")
    assert d.policy_hash == reference.hash


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=st.text(max_size=300))
def test_fuzz_unicode_text(reference: CompiledPolicy, workspace: str, text: str) -> None:
    d = reference.judge(text, cwd=workspace)
    assert d.verdict in ("allow", "ask", "deny")


@pytest.mark.parametrize("char", ["\U000a0000", "\U000e0001", "\U000f0000", "\U0010ffff"])
def test_high_plane_characters_never_reach_the_parser(
    reference: CompiledPolicy, workspace: str, char: str
) -> None:
    # `$${` followed by one of these crashed tree-sitter-bash 0.25 about half the time
    # (a segfault: the whole daemon). Repeat so a regression shows up reliably.
    for _ in range(50):
        d = reference.judge(f"echo $${{{char}}}", cwd=workspace)
        assert d.verdict == "deny"
        assert "input.unparsable-char" in d.rules


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=st.text(alphabet=st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
                    max_size=20))
def test_fuzz_supplementary_planes(reference: CompiledPolicy, workspace: str, text: str) -> None:
    d = reference.judge("$${" + text, cwd=workspace)
    assert d.verdict in ("allow", "ask", "deny")


@pytest.mark.parametrize("char", ["\U0002c000", "\U00032000", "\U00034fff", "é", "😀"])
def test_non_ascii_never_reaches_the_parser_unmasked(
    reference: CompiledPolicy, workspace: str, char: str
) -> None:
    # Unmasked, these crashed tree-sitter-bash now and then (a segfault: the whole daemon).
    for _ in range(50):
        d = reference.judge(f"echo $${{{char}x}}", cwd=workspace)
        assert d.verdict in ("allow", "ask", "deny")


def test_masked_parse_still_reads_the_real_words() -> None:
    from acpd.policy.parse import parse

    script = parse("echo \"héllo wörld\" 😀 > ñ.txt; grep -r 'ß' src")
    assert [c.words for c in script.commands] == [
        ["echo", '"héllo wörld"', "😀"],
        ["grep", "-r", "'ß'", "src"],
    ]
    assert [r.target for r in script.commands[0].redirects] == ["ñ.txt"]


@pytest.mark.parametrize("cmd", [
    "echo x > /etc/x.txt", "printf x >> /usr/local/a.txt", "cp a.txt /etc/b.txt",
    "echo x > .git/hooks/a.txt", "tee /etc/a.txt < in", "echo > out.txt"])
def test_a_deny_read_name_never_hides_a_stricter_verdict(
        default: CompiledPolicy, workspace: str, cmd: str) -> None:
    """Writing over a file deny_read names asks (its content cannot be shown), but only when
    nothing stricter applies: an overlay adding `**/*.txt` once turned the deny for a write
    outside the workspace into that ask (found by test_overlays_never_loosen)."""
    overlay = Overlay("p0", "/plugins/p0/plugin.toml", ShellOverlay(deny_read=("**/*.txt",)))
    merged = compile_policy(merge(default.policy, [overlay]), check_examples=False)
    before = default.judge(cmd, cwd=workspace, trust="provisional")
    after = merged.judge(cmd, cwd=workspace, trust="provisional")
    assert RANK[after.verdict] >= RANK[before.verdict], (before, after)
    assert after.verdict != "allow"
