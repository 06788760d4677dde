"""Brace expansion bombs: bash builds every word of `{1..2000000000}` or thirty `{a,b}` in a
row before the command starts (hundreds of GB), though the judge looks at 64 of them. The
count is computed without building the words, checked here against real bash, and a command
past MAX_WORDS asks, sandboxed or not (the sandbox does not bound memory)."""

from __future__ import annotations

import random
import subprocess

import pytest

from acpd.policy.braces import brace_expand, chars_of, word_count
from acpd.policy.budget import TooComplex
from acpd.policy.engine import CompiledPolicy
from acpd.policy.expansion import MAX_WORDS

ALPHABET = ["a", "b", ",", "{", "}", "..", "1", "3", "-", "x"]


def bash_text(chars: list[tuple[str, bool]]) -> str:
    return "".join(f"'{c}'" if quoted else c for c, quoted in chars)


def random_words(seed: int, n: int) -> list[list[tuple[str, bool]]]:
    rng = random.Random(seed)
    words: list[list[tuple[str, bool]]] = []
    for _ in range(n):
        chars = [("p", False)]  # a prefix: bash drops empty words, which the count keeps
        for _ in range(rng.randint(1, 16)):
            piece = rng.choice(ALPHABET)
            quoted = rng.random() < 0.1
            chars.extend((c, quoted) for c in piece)
        words.append(chars)
    return words


@pytest.mark.parametrize("seed", range(8))
def test_the_count_is_what_bash_makes(seed: int) -> None:
    words = random_words(seed, 1500)
    script = "\n".join(f"set -- {bash_text(w)}; echo $#" for w in words)
    made = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          check=True).stdout.split()
    assert len(made) == len(words)
    wrong = []
    for word, count in zip(words, made, strict=True):
        try:
            if int(count) != word_count(word):
                wrong.append((bash_text(word), int(count), word_count(word)))
        except TooComplex:  # a quoted comma in an amble: the judge asks
            pass
    assert wrong == []


@pytest.mark.parametrize(("text", "count"), [
    ("{a,b}" * 30, 2**30), ("{1..2000000000}", 2_000_000_000), ("{a..z}" * 4, 26**4),
    ("{0..100..10}", 11), ("{z..a..-5}", 6), ("x{a,{b,c}{1..3}}", 7), ("{" * 40 + "a", 1),
    ("{a,b}" * 200, 10**15),  # clamped
])
def test_counts_without_building(text: str, count: int) -> None:
    assert word_count([(c, False) for c in text]) == count


def verdicts(policy: CompiledPolicy, workspace: str, cmd: str) -> set[str]:
    return {policy.judge(cmd, cwd=workspace, trust="trusted", sandboxed=s).verdict
            for s in (False, True)}


@pytest.mark.parametrize("cmd", [
    "echo " + "{a,b}" * 30, "echo {1..2000000000}", "touch f{1..99999} g{1..99999}",
    "printf '%s\\n' {a..z}{a..z}{a..z}{a..z}", "sh -c 'echo {1..9999999}'",
    "for i in {1..100000000}; do :; done", "echo {1..60000}; echo {1..60000}",
    "x=({1..999999999})",
])
def test_a_command_that_expands_past_the_limit_asks(default: CompiledPolicy, workspace: str,
                                                   cmd: str) -> None:
    decision = default.judge(cmd, cwd=workspace, trust="trusted", sandboxed=True)
    assert decision.verdict in ("ask", "deny"), cmd
    assert verdicts(default, workspace, cmd) <= {"ask", "deny"}


@pytest.mark.parametrize("cmd", [
    "mkdir -p build/{debug,release}/{bin,lib}", "touch file{0001..9999}",
    f"echo {{1..{MAX_WORDS}}}", "echo '{1..999999999}'", "echo \\{1..999999999\\}",
])
def test_ordinary_brace_expansion_stays_allowed(default: CompiledPolicy, workspace: str,
                                                cmd: str) -> None:
    assert verdicts(default, workspace, cmd) == {"allow"}, cmd


def test_a_later_deny_is_still_found(default: CompiledPolicy, workspace: str) -> None:
    decision = default.judge("echo {1..999999999}; git push --force origin main",
                             cwd=workspace, trust="trusted")
    rules = {f.rule_id for f in decision.findings} if hasattr(decision, "findings") else set()
    assert decision.verdict == "deny" or "git" in " ".join(decision.reasons), rules


SEQUENCES = ["{t..t..1}", "{+1..3}", "{1..+3}", "{1..5..+2}", "{01..3}", "{-01..2}", "{1..03}",
             "{a..e..2}", "{a..e..0}", "{1..5..0}", "{a..e..-2}", "{a..9}", "{1..a}", "{0x1..3}",
             "{1..3..}", "{--1..2}", "{+-1..2}", "{1..10..3}", "{3..1}", "{-3..-1}",
             "{007..010}", "{a..c..+1}", "{00..2}", "{-1..02}", "{+01..3}", "{-0..3}",
             "x{1..3}y{a..b}", ".gi{t..t..1}/config", ".en{v..v..1}", "{a..c..+1}x"]


@pytest.mark.parametrize("word", SEQUENCES)
def test_the_judge_reads_a_sequence_as_bash_does(word: str) -> None:
    """`{t..t..1}` is `t` to bash: the judge once read `.gi{t..t..1}/config` literally (a
    letter sequence with a step, a `+` sign, zero padding: each read its own way)."""
    made = subprocess.run(["bash", "-c", f"printf '%s\\n' {word}"], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    assert brace_expand([(word, False)]) == made
    assert word_count([(c, False) for c in word]) == len(made)


@pytest.mark.parametrize("cmd", [
    "printf x >> .gi{t..t..1}/config", "cat .en{v..v..1}", "cat .e{n..n}v",
    "echo {+1..2000000000}", "echo {1..+2000000000}", "echo {1..2000000000..+1}",
])
def test_sequences_spelled_otherwise_are_judged(default: CompiledPolicy, workspace: str,
                                                cmd: str) -> None:
    assert verdicts(default, workspace, cmd) <= {"ask", "deny"}, cmd


def test_each_word_counts_once_however_often_it_is_judged(default: CompiledPolicy,
                                                           workspace: str) -> None:
    """The judge expands a `for` list's words several times (the loop variable, the body);
    the count is taken once per word as written."""
    for cmd in ("for i in {1..40000}; do :; done", "declare -a x=({1..60000})",
                "x=({1..60000}); echo ok", "select i in {1..90000}; do :; done"):
        for sandboxed in (False, True):
            reasons = " ".join(default.judge(cmd, cwd=workspace, trust="trusted",
                                             sandboxed=sandboxed).reasons)
            assert "brace expansion makes" not in reasons, (cmd, reasons)
    reasons = " ".join(default.judge("for i in {1..60000} {1..60000}; do :; done",
                                     cwd=workspace, trust="trusted").reasons)
    assert "brace expansion makes 120,000 words" in reasons


def test_hostile_words_end_in_bounded_work() -> None:
    """8,000 nested braces in one word once cost 5.6 s of CPU outside the budget's checks.
    Long braced words, deep alternatives and runs of unmatched braces now stop early."""
    for word in ("{" * 8000 + "a,b" + "}" * 8000, "{" * 5000, "x{" * 600 + "a,b}",
                 "{a," * 40 + "b" + "}" * 40):
        chars = [(c, False) for c in word]
        with pytest.raises(TooComplex):
            word_count(chars)
        with pytest.raises(TooComplex):
            brace_expand([(word, False)])


def _random_field(rng: random.Random) -> list[tuple[str, bool]]:
    pieces = ["a", "b", ",", "{", "}", "..", "1", "3", "x", "{}", "-", "{a,b}", "{1..3}", "{}{"]
    return [(rng.choice(pieces), rng.random() < 0.12) for _ in range(rng.randint(1, 14))]


def _quoted(pieces: list[tuple[str, bool]]) -> str:
    return "".join(f"'{text}'" if quoted else text for text, quoted in pieces)


@pytest.mark.parametrize("seed", range(3))
def test_the_judge_expands_what_bash_expands(seed: int) -> None:
    """Fields from bash's hard cases (a `{}` at the start, a `}` before any comma, quoted
    parts, nested alternatives and sequences): the words the judge reads are bash's, and
    the count is their number (bash drops empty words; the count keeps them)."""
    rng = random.Random(seed)
    fields = [_random_field(rng) for _ in range(1500)]
    script = "\n".join(f"printf '<%s>' {_quoted(f)}; echo" for f in fields)
    lines = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    wrong = []
    for field, line in zip(fields, lines, strict=False):
        made = line[1:-1].split("><")
        try:
            judged = brace_expand(field)
        except TooComplex:  # asks: never a wrong reading
            continue
        count = word_count(chars_of(field))
        if [w for w in judged if w] != [w for w in made if w] or count != len(judged):
            wrong.append((_quoted(field), made, judged, count))
    assert wrong == []


@pytest.mark.parametrize("cmd", [
    "cat .{Y..a..3}env", "sed -i 1d .gi{Y..a..3}t/config",  # `\` made by a letter range
    "echo EVIL >> {~/.bashrc,}", "touch {~,.}/.bashrc", "cat {~/.aws/credentials,}",
    "for ab in .env; do for a in x; do cat $a{b,}; done; done",  # `$ab`, not `$a` + b
    "echo > {1..1000}{1..1000}{1..1000}", "cat < {1..2000000}",  # redirect targets count
])
def test_round_three_spellings_are_not_allowed(default: CompiledPolicy, workspace: str,
                                               cmd: str) -> None:
    """From /work/redteam10.md: each read or wrote a protected file, or built billions of
    words, with an allow."""
    assert verdicts(default, workspace, cmd) <= {"ask", "deny"}, cmd


@pytest.mark.parametrize("cmd", [
    "cat {.e,x}\\nv", "cat .e{n,x}\\v", "cat {\\.env,}", "cat < .e{n..n}\\v",
    "echo x >.gi{t..t}\\/config", "for f in {.e,x}\\nv; do cat $f; done",
    "sort -o .gi{t..t}\\/config in", "sed -i 1d .gi{t,x}\\/config",
])
def test_a_word_tree_sitter_splits_is_judged_whole(default: CompiledPolicy, workspace: str,
                                                   cmd: str) -> None:
    """tree-sitter-bash splits `{.e,x}\\nv` in two at the backslash next to a brace, though
    no blank separates them: bash reads one word (`.env`), the judge read `.e`, `x`, `nv`.
    Found attacking this change; adjacent word nodes are now one word (treenodes.py)."""
    assert "allow" not in verdicts(default, workspace, cmd), cmd
