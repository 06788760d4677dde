"""The parse of plain lines without tree-sitter (policy/fastparse.py) gives exactly the Script
the full parse gives, or declines."""

from __future__ import annotations

import random

import pytest

from acpd.policy.fastparse import parse_simple
from acpd.policy.parse import Script
from acpd.policy.parse import parse_full as parse

WORDS = ["ls", "cat", "git", "status", "-la", "--x=y", "src/", "a.txt", "'a b'", '"c d"', "==",
         "=~", "=x", "a+b", "~+", ":", "x:y", "a=~b", "+", "~-",
         "x='y z'", "~/x", "*.py", "a?", "2", "12", "a2", "-", "--", "if", "then", "fi",
         "time", "export", "A=1", "do", "%s", "^x", "@a", "a,b", "'$x'", '"a;b"', "'a|b'",
         "x'y'\"z\"", "in", "!", "''", '""']
OPS = [" ", " ", " ", " && ", " || ", " | ", "; ", ";", "|", "&&", " ; ", " & ", "&"]
REDIRECTS = [">x", "> x", ">>x", "2>/dev/null", "2>&1", ">&2", "2>&-", "&>x", "&>>x", ">|x",
             "<x", "< x", "<&0", "1>x", "3<x", ">'a b'", '>"x"', ">&x", "<>x", "<<E", ">"]


def _shape(script: Script) -> object:
    return ([(c.words, [(r.op, r.target, r.fd, r.kind) for r in c.redirects], c.assigns,
              c.function, c.keyword, c.heredoc, c.fallback, c.background)
             for c in script.commands],
            script.assigns, script.for_vars, script.functions, script.blocked, script.evals,
            script.has_error, script.too_big)


def _line(r: random.Random) -> str:
    parts: list[str] = []
    for _ in range(r.randint(1, 8)):
        roll = r.random()
        if roll < 0.6:
            parts.append(r.choice(WORDS))
        elif roll < 0.8:
            parts.append(r.choice(OPS))
        else:
            parts.append(r.choice(REDIRECTS))
        if r.random() < 0.7:
            parts.append(" ")
    return "".join(parts).strip()


@pytest.mark.parametrize("seed", [15, 16, 17])
def test_agrees_with_the_full_parse_on_generated_lines(seed: int) -> None:
    r = random.Random(seed)
    fast_taken = 0
    for _ in range(20000):
        line = _line(r)
        fast = parse_simple(line)
        if fast is None:
            continue
        fast_taken += 1
        assert _shape(fast) == _shape(parse(line)), line
    assert fast_taken > 1000  # the generator does reach the fast path


@pytest.mark.parametrize("line", [
    "ls -la src", "git status", "git diff --stat HEAD~1", "grep -rn 'rm -rf' src/",
    "cat README.md | wc -l", "npm test && npm run build", "ls 2>/dev/null", "make -j4 >log 2>&1",
    "cat >a b >c d", "ls; pwd;", "echo \"a b\" 'c'", "ls > x y",
])
def test_common_lines_take_the_fast_path(line: str) -> None:
    fast = parse_simple(line)
    assert fast is not None
    assert _shape(fast) == _shape(parse(line))


@pytest.mark.parametrize("line", [
    "echo $HOME", "echo `id`", "a=1 ls", "if true; then ls; fi", "ls &", "(ls)", "{ ls; }",
    "echo a\\ b", "ls #x", "cat <<E\nx\nE", "ls &&", "| ls", "echo 'unclosed", "[ -f x ]",
    "export A=1", "time ls", "! ls", "ls\nrm x", "ls;;", "ls | cat >x", ">a cat b", "cat%s",
])
def test_other_lines_decline(line: str) -> None:
    assert parse_simple(line) is None


@pytest.mark.parametrize("seed", [7, 8])
def test_agrees_on_words_of_random_plain_characters(seed: int) -> None:
    """Words built character by character from everything a plain word may hold (tree-sitter
    reads some of them as operators: `==`, `=~`, `a?b` in command position)."""
    chars = "aZ09_./:=,+^~*?-"
    r = random.Random(seed)
    taken = 0
    for _ in range(15000):
        words = ["".join(r.choice(chars) for _ in range(r.randint(1, 5)))
                 for _ in range(r.randint(1, 4))]
        line = r.choice(["ls ", "git diff ", ""]) + " ".join(words) + r.choice(
            ["", " | wc -l", " && ls", " >x", " 2>/dev/null", "; pwd"])
        fast = parse_simple(line)
        if fast is None:
            continue
        taken += 1
        assert _shape(fast) == _shape(parse(line)), line
    assert taken > 5000
