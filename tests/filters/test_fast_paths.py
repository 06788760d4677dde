"""The fast paths of the output stage give the answers of the plain algorithms: one substring
pass for all triggers (chunked, across chunk boundaries), sanitising on the whole string,
secrets found in large outputs and across what sanitising joins."""

from __future__ import annotations

import random

import pytest

from acpd.tools.filters import build_filter_set, sanitize_output
from acpd.tools.filters.preserve import TRIGGERS, find_preserved
from acpd.tools.filters.substrings import CHUNK, SubstringSet
from acpd.tools.secrets import SecretScanner

TOKEN = "ghp_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xYz9Q8"


def test_substrings_match_plain_in_checks() -> None:
    needles = SubstringSet(["sk-", "sk-ant-", "gh", "PRIVATE KEY", "é", "xox"])
    rnd = random.Random(7)
    alphabet = ["sk-", "ant-", "g", "h", "PRIVATE ", "KEY", "é", "x", "o", "a", "\n", " "]
    for _ in range(2000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30)))
        assert needles.present(text) == {n for n in needles.needles if n in text}


@pytest.mark.parametrize("at", [0, CHUNK - 5, CHUNK - 1, CHUNK, 3 * CHUNK + 2])
def test_substrings_found_across_chunk_boundaries(at: int) -> None:
    filler = "é" + "x" * (4 * CHUNK)
    text = filler[:at] + "sk-ant-" + filler[at:] + "PRIVATE KEY"
    assert SubstringSet(["sk-", "sk-ant-", "PRIVATE KEY", "nope"]).present(text) == {
        "sk-",
        "sk-ant-",
        "PRIVATE KEY",
    }


def _reference_sanitize(text: str) -> str:
    """The line-by-line algorithm the fast one replaced."""
    import re

    ansi = re.compile(
        r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
        r"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\)?|\x1b[@-Z\\-_]|\x1b"
    )
    text = ansi.sub("", text)
    text = re.sub(r"\r+\n", "\n", text)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            stripped = line.rstrip("\r")
            lines[i] = stripped[stripped.rfind("\r") + 1 :]
    return re.sub(r"\n(?:[ \t]*\n){2,}", "\n\n", "\n".join(lines))


def test_sanitize_matches_the_line_by_line_algorithm() -> None:
    rnd = random.Random(11)
    alphabet = ["a", "b", "\r", "\n", " ", "\t", "\x1b", "[", "0", "m", "]", "\x07", "\\", "P",
                "\r\n", "\x1b[0m", "\x1b[1;32m"]
    for _ in range(20000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 16)))
        assert sanitize_output(text) == _reference_sanitize(text), repr(text)


def test_sanitize_returns_clean_text_itself() -> None:
    text = "plain\noutput\n"
    assert sanitize_output(text) is text


def test_secret_deep_in_a_large_output_is_redacted() -> None:
    fs = build_filter_set()
    log = "".join(f"   Compiling crate-{i} v0.1.0\n" for i in range(60000))
    out = fs.apply("cargo build", log + f"export GH={TOKEN}\n" + log, 0)
    assert TOKEN not in out.text
    assert out.raw_redacted is not None and TOKEN not in out.raw_redacted
    assert "GitHub token" in out.secret_kinds


def test_secret_split_by_an_escape_sequence_is_redacted() -> None:
    # The raw text holds no whole token; the sanitised text the model would see does.
    fs = build_filter_set()
    raw = f"token: {TOKEN[:10]}\x1b[0m{TOKEN[10:]}\nok\n"
    out = fs.apply("echo hi", raw, 0)
    assert TOKEN not in out.text
    assert "GitHub token" in out.secret_kinds


def test_scanner_given_known_triggers_agrees_with_its_own_pass() -> None:
    scanner = SecretScanner()
    text = f"x\nAuthorization: Bearer {TOKEN}\n"
    assert scanner.scan(text, scanner.present(text)) == scanner.scan(text)
    assert scanner.scan("nothing here", set()) == ("nothing here", [])


def test_preserved_pass_accepts_a_list_of_kept_lines() -> None:
    raw = "ok\nerror: permission denied\nok"
    assert find_preserved(raw, ["ok"], failed=False) == ["error: permission denied"]
    assert find_preserved(raw, ["ok"], failed=False, security=False) == []
    assert "ermission" in TRIGGERS
