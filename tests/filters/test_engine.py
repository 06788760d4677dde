"""Matching, overrides, confidence, stats line, sanitising, preserved lines, metrics."""

from __future__ import annotations

import pytest

from acpd.tools.filters import (
    FilterConfidence,
    FilterSettings,
    build_filter_set,
    last_segment,
    sanitize_output,
)


@pytest.mark.parametrize(
    ("command", "segment"),
    [
        ("cd x && cargo test 2>&1 | tail -80", "cargo test"),
        (
            "cd /p && cargo clippy --workspace -- -D warnings 2>&1",
            "cargo clippy --workspace -- -D warnings",
        ),
        ("make clean; make -j4 > build.log", "make -j4"),
        ("false || RUST_LOG=debug time cargo test", "cargo test"),
        ("git commit -m 'a && b; c' && git status", "git status"),
        ('echo "x | y" | grep x', 'echo "x | y"'),
        ("pytest -q 2> err.txt", "pytest -q"),
        ("cd a &&\ngo test ./...", "go test ./..."),
    ],
)
def test_last_segment(command: str, segment: str) -> None:
    assert last_segment(command) == segment


def test_compound_command_matches_the_last_segment() -> None:
    filters = build_filter_set()
    rule = filters.match("cd x && cargo test 2>&1 | tail -80")
    assert rule is not None and rule.name == "cargo-test"
    assert filters.match("cargo test && echo done") is None
    assert filters.match("ruff format .") is None


def test_user_rule_overrides_by_name_and_disables_by_name() -> None:
    user = """
[[rules]]
name = "make"
match = { prefix = "make" }
strategy = { type = "truncate", max_lines = 4, head = 1, tail = 1 }

[[rules]]
name = "git-status"
enabled = false
"""
    filters = build_filter_set(user, settings=FilterSettings(disabled=frozenset({"pytest"})))
    names = [r.name for r in filters.rules]
    assert names.count("make") == 1
    result = filters.apply("make", "\n".join(str(i) for i in range(10)), 0)
    assert result.text.splitlines() == ["0", "... 8 lines omitted ...", "9"]
    assert result.confidence is FilterConfidence.PARTIAL
    assert filters.match("git status") is None
    assert filters.match("pytest -q") is None


def test_unknown_toggle_is_reported() -> None:
    filters = build_filter_set('[[rules]]\nname = "nope"\nenabled = false\n')
    assert any("'nope'" in w for w in filters.warnings)


def test_master_switch_off_still_redacts() -> None:
    filters = build_filter_set(settings=FilterSettings(enabled=False))
    out = "".join(f"test t{i} ... ok\n" for i in range(10))
    result = filters.apply("cargo test", out, 0)
    assert result.rule_name is None and result.stats_line is None
    assert result.text == out.rstrip("\n")


def test_stats_line_only_when_lines_removed() -> None:
    filters = build_filter_set()
    out = "".join(f"test t{i} ... ok\n" for i in range(341))
    out += "test result: ok. 341 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    result = filters.apply("cargo test", out, 0)
    assert result.stats_line == "[shell] 342 lines -> 1 lines, 99.7% filtered"
    assert result.confidence is FilterConfidence.FULL
    unchanged = filters.apply("git status", "## main\n M a.py\n", 0)
    assert unchanged.stats_line is None and unchanged.rule_name == "git-status"


def test_worst_confidence_across_stages() -> None:
    user = """
[[rules]]
name = "two"
match = { prefix = "two" }
strategy = [
  { type = "strip_noise", patterns = ['^x'] },
  { type = "truncate", max_lines = 3, head = 1, tail = 1 },
]
"""
    filters = build_filter_set(user)
    # strip_noise removes nothing (Fallback); truncate cuts (Partial): Fallback wins.
    assert filters.apply("two", "a\nb\nc\nd\ne", 0).confidence is FilterConfidence.FALLBACK
    assert filters.apply("two", "x\nb", 0).confidence is FilterConfidence.FULL


def test_unrecognised_output_is_kept_whole() -> None:
    result = build_filter_set().apply("cargo test", "error: no such command: `tset`\n", 101)
    assert result.confidence is FilterConfidence.FALLBACK
    assert result.text == "error: no such command: `tset`"


def test_sanitize_output() -> None:
    raw = (
        "\x1b[1;32mok\x1b[0m\r\nDownloading  10%\rDownloading  55%\rDownloading 100%\n"
        "\n\n\n  \nend\x1b]0;title\x07\n"
    )
    assert sanitize_output(raw) == "ok\nDownloading 100%\n\nend\n"


def test_preserved_lines_are_reappended() -> None:
    user = """
[[rules]]
name = "quiet"
match = { prefix = "deploy" }
strategy = { type = "keep_matching", patterns = ['^step'] }
"""
    filters = build_filter_set(user)
    raw = "step 1\nfetching\nfatal: Authentication failed for 'https://example.com/repo'\nstep 2\n"
    result = filters.apply("deploy", raw, 0)
    assert result.preserved == ("fatal: Authentication failed for 'https://example.com/repo'",)
    assert result.text.endswith("Authentication failed for 'https://example.com/repo'")
    # A failing command filtered by a heuristic keeps its error lines too.
    failed = filters.apply("deploy", "step 1\nerror: disk full\n", 1)
    assert "error: disk full" in failed.text


def test_metrics_count_hits_and_lines() -> None:
    filters = build_filter_set()
    out = (
        "".join(f"test t{i} ... ok\n" for i in range(9))
        + "test result: ok. 9 passed; 0 failed; 0 ignored\n"
    )
    filters.apply("cargo test", out, 0)
    filters.apply("cargo test", out, 0)
    stats = filters.metrics.snapshot()["cargo-test"]
    assert (stats.hits, stats.lines_in, stats.lines_out, stats.full) == (2, 20, 2, 2)
    assert stats.savings == pytest.approx(90.0)


def test_reload_builds_a_new_set_and_keeps_metrics() -> None:
    first = build_filter_set()
    first.apply("cargo test", "test result: ok. 1 passed; 0 failed; 0 ignored\ntest a ... ok\n", 0)
    second = build_filter_set(
        '[[rules]]\nname = "cargo-test"\nenabled = false\n', metrics=first.metrics
    )
    assert second is not first and first.match("cargo test") is not None
    assert second.match("cargo test") is None
    assert second.metrics.snapshot()["cargo-test"].hits == 1
