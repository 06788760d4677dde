"""The fast parser's quoted strings (policy/fastparse.py): a single-quoted string of any
printable ASCII, and a double-quoted one without `$`, backquote, backslash or `!`, give exactly
the Script tree-sitter gives; anything else in quotes declines."""

from __future__ import annotations

import random

import pytest

from acpd.policy.fastparse import parse_simple
from acpd.policy.parse import parse_full

from .test_fastparse import _shape

PRINTABLE = [chr(c) for c in range(32, 127)] + ["\t"]
PLAIN = ["ls", "git", "log", "-m", "--grep=", "x", "a.txt", "=", "2", "-", "src/", "~"]
OPS = [" ", " ", " && ", " || ", " | ", "; ", " >", " 2>", " <", " >>"]


def _quoted(r: random.Random) -> str:
    body = "".join(r.choice(PRINTABLE) for _ in range(r.randint(0, 8)))
    if r.random() < 0.5:
        return "'" + body.replace("'", "") + "'"
    return '"' + body.replace('"', "") + '"'


def _word(r: random.Random) -> str:
    return "".join(_quoted(r) if r.random() < 0.4 else r.choice(PLAIN)
                   for _ in range(r.randint(1, 3)))


def _line(r: random.Random) -> str:
    parts = [r.choice(["ls", "git", "echo", "awk", "grep"])]
    for _ in range(r.randint(1, 6)):
        parts.append(r.choice(OPS) if r.random() < 0.3 else " ")
        parts.append(_word(r))
    return "".join(parts)


@pytest.mark.parametrize("seed", [31, 32, 33])
def test_quoted_words_agree_with_the_full_parse(seed: int) -> None:
    r = random.Random(seed)
    taken = 0
    for _ in range(6000):
        line = _line(r)
        fast = parse_simple(line)
        if fast is None:
            continue
        taken += 1
        assert _shape(fast) == _shape(parse_full(line)), line
    assert taken > 1500


@pytest.mark.parametrize("line", [
    "awk '{print $1}' data.txt", "git commit -m \"fix: edge case (#12)\"",
    "git log --grep='<<<' --oneline", "rg -n 'eval\\(' src/", "echo '`id`' \"a;b|c&d\"",
    "printf -v 'a[$(id)]' 1", "sed 's/.*/x/e' README.md",
])
def test_lines_with_quoted_specials_take_the_fast_path(line: str) -> None:
    fast = parse_simple(line)
    assert fast is not None
    assert _shape(fast) == _shape(parse_full(line))


@pytest.mark.parametrize("line", [
    'echo "$HOME"', 'echo "`id`"', 'echo "a\\b"', 'echo "a!b"', "echo 'a\nb'",
    "cat <<'E'", "echo 'x' <<E", "echo 'unclosed", 'echo "unclosed',
])
def test_quoted_text_bash_expands_declines(line: str) -> None:
    assert parse_simple(line) is None
