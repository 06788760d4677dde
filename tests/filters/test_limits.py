"""Safety limits: oversize files, long and hostile regexes, invalid rules next to valid ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acpd.tools.filters import (
    MAX_FILE_BYTES,
    FilterConfidence,
    FilterSettings,
    UnsafePatternError,
    build_filter_set,
    compile_pattern,
    load_filter_set,
)
from acpd.tools.filters.strategies import Budget, FilterTimeoutError
from acpd.tools.filters.strategies.lines import StripNoise

VALID = """
[[rules]]
name = "my-tool"
match = { prefix = "mytool" }
strategy = { type = "strip_noise", patterns = ['^progress'] }
"""


def test_oversize_file_is_rejected_and_defaults_kept(tmp_path: Path) -> None:
    path = tmp_path / "filters.toml"
    path.write_text(VALID + "#" * MAX_FILE_BYTES)
    filters = load_filter_set(FilterSettings(filters_path=str(path)))
    assert any("over the" in w and "limit" in w for w in filters.warnings)
    names = {r.name for r in filters.rules}
    assert "my-tool" not in names and "cargo-test" in names


def test_oversize_text_is_rejected() -> None:
    filters = build_filter_set(VALID + "#" * MAX_FILE_BYTES)
    assert "my-tool" not in {r.name for r in filters.rules}
    assert filters.warnings


def test_regex_over_512_characters_is_rejected() -> None:
    with pytest.raises(UnsafePatternError, match="512"):
        compile_pattern("a" * 513)
    compile_pattern("a" * 512)
    long_rule = VALID.replace("^progress", "x" * 600)
    filters = build_filter_set(long_rule)
    assert "my-tool" not in {r.name for r in filters.rules}
    assert any("'my-tool' skipped" in w and "512" in w for w in filters.warnings)


def test_invalid_rules_are_skipped_valid_ones_load() -> None:
    text = (
        VALID
        + """
[[rules]]
name = "two-matchers"
match = { prefix = "a", exact = "a" }
strategy = { type = "truncate" }

[[rules]]
name = "bad-type"
match = { prefix = "b" }
strategy = { type = "summarize" }

[[rules]]
name = "bad-regex"
match = { regex = "(unclosed" }
strategy = { type = "truncate" }

[[rules]]
name = "typo-key"
match = { prefix = "c" }
strategy = { type = "truncate", max_line = 5 }

[[rules]]
name = "head-over-max"
match = { prefix = "d" }
strategy = { type = "truncate", max_lines = 10, head = 8, tail = 8 }

[[rules]]
match = { prefix = "e" }
strategy = { type = "truncate" }

[[rules]]
name = "also-valid"
match = { regex = '^mytool2\\b' }
strategy = { type = "dedup" }
"""
    )
    filters = build_filter_set(text, user_source="user.toml")
    names = [r.name for r in filters.rules]
    assert names[:2] == ["my-tool", "also-valid"]  # new user rules come first
    for bad in ("two-matchers", "bad-type", "bad-regex", "typo-key", "head-over-max"):
        assert bad not in names
        assert any(f"'{bad}' skipped" in w for w in filters.warnings), bad
    assert any("rule #7 skipped" in w for w in filters.warnings)
    assert "cargo-test" in names


def test_not_toml_keeps_defaults() -> None:
    filters = build_filter_set("[[rules]\nname=")
    assert any("not valid TOML" in w for w in filters.warnings)
    assert "cargo-test" in {r.name for r in filters.rules}


HOSTILE = [
    r"(a+)+$",
    r"(a|aa)+$",
    r"(\w+\s?)*$",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
    r"(.*a){12}",
    r"(x+x+)+y",
    r".*.*.*=.*",
    r"(a|a?)+b",
    r"(\d+)*\d{3}$",
    r"(\w|\d)+$",
]
"""Catastrophic on a backtracking engine; linear on RE2, so they are accepted and run."""


@pytest.mark.parametrize("pattern", HOSTILE)
def test_catastrophic_shapes_run_linear_and_agree_with_re(pattern: str) -> None:
    compiled = compile_pattern(pattern)
    reference = re.compile(pattern)
    for text in ("a" * 12 + "!", "aaa", "x=1", "xxxy", "a" * 10 + "b", "12345", "Ab.Cd"):
        assert (compiled.search(text) is None) == (reference.search(text) is None), text
    hostile = "a" * 200_000 + "!"
    assert (compiled.search(hostile) is None) == (pattern not in (r"(.*a){12}", r"(\w+\s?)*$"))


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?<=a)b", r"(?=x)", r"(?(1)a|b)", "(unclosed"])
def test_patterns_re2_cannot_run_are_refused(pattern: str) -> None:
    with pytest.raises(UnsafePatternError, match=r"RE2|invalid"):
        compile_pattern(pattern)


def test_word_or_digit_rule_on_a_1_mb_line_gives_the_right_answer() -> None:
    """Issue 15: `(\\w|\\d)+$` froze the daemon for 31 s on long output. The whole line is
    matched (not a prefix), so the answer is the true one."""
    text = VALID.replace("strip_noise", "keep_matching").replace("^progress", r"(\w|\d)+$")
    filters = build_filter_set(text)
    assert "my-tool" in {r.name for r in filters.rules}
    rule = next(r for r in filters.rules if r.name == "my-tool")
    no_match = "a" * 1_000_000 + "!"
    match = "b" * 1_000_000
    kept = rule.stages[0].apply([no_match, match, "short!"], Budget(60.0))
    assert kept.lines == [match]


SAFE = [
    r"^\s*Compiling \S+ v\S+",
    r"(\d+\.)+\d+",
    r"(\d{1,3}\.){3}\d{1,3}",
    r"^(foo|bar)+$",
    r"^[\w.-]+@[\w-]+(\.[\w-]+)+$",
    r"^\S+\s+\S+\s+\S+$",
    r"error.*:\s*\w+",
    r"^#\d+ \d+\.\d+ ",
]


@pytest.mark.parametrize("pattern", SAFE)
def test_ordinary_patterns_are_accepted(pattern: str) -> None:
    compile_pattern(pattern)


def test_hostile_rule_does_not_hang_the_daemon() -> None:
    text = VALID.replace("^progress", "(a+)+$") + VALID.replace("my-tool", "ok").replace(
        "mytool", "oktool"
    )
    filters = build_filter_set(text)
    hostile_output = ("a" * 40 + "!\n") * 200
    result = filters.apply("mytool run", hostile_output, 0)
    assert "ok" in {r.name for r in filters.rules}
    assert result.text.splitlines() == hostile_output.rstrip("\n").splitlines()


def test_budget_stops_a_slow_rule_and_falls_back() -> None:
    # The quadratic shapes that pass the checker are bounded by the time budget.
    strategy = StripNoise.build({"patterns": [r"^\s*x"]})
    expired = Budget(-1.0)
    with pytest.raises(FilterTimeoutError):
        strategy.apply(["a"], expired)


def test_engine_turns_a_timeout_into_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    from acpd.tools.filters import engine

    monkeypatch.setattr(engine, "BASE_BUDGET_S", -10.0)
    filters = build_filter_set()
    raw = (
        "".join(f"test t{i} ... ok\n" for i in range(50))
        + "test result: ok. 50 passed; 0 failed; 0 ignored\n"
    )
    result = filters.apply("cargo test", raw, 0)
    assert result.confidence is FilterConfidence.FALLBACK
    assert "took too long" in result.text
    assert filters.metrics.snapshot()["cargo-test"].timeouts == 1
    assert filters.match("cargo test") is not None
    assert filters.apply("cargo test", raw, 0).rule_name is None  # tripped until reload
