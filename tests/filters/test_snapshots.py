"""Every built-in rule on real captured outputs (or hand-written ones where the tool is absent).

The filtered text must equal the committed snapshot (tests/filters/snapshots/); regenerate with
ACPD_UPDATE_SNAPSHOTS=1 after reviewing a change. Each sample also states the rule it must
match, the minimum line savings and the lines that must survive.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from acpd.tools.filters import FilterSet, build_filter_set
from tests.filters.conftest import SAVINGS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "outputs"
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
SAMPLES: list[dict[str, Any]] = tomllib.loads((FIXTURES / "samples.toml").read_text())["sample"]
UPDATE = os.environ.get("ACPD_UPDATE_SNAPSHOTS") == "1"


@pytest.fixture(scope="module")
def filters() -> FilterSet:
    result = build_filter_set()
    assert result.warnings == ()
    return result


@pytest.mark.parametrize("sample", SAMPLES, ids=[s["file"] for s in SAMPLES])
def test_sample_matches_snapshot(filters: FilterSet, sample: dict[str, Any]) -> None:
    raw = (FIXTURES / sample["file"]).read_text()
    result = filters.apply(sample["command"], raw, sample["exit_code"])
    assert result.rule_name == sample["rule"]
    saved = 100.0 * result.removed_lines / result.lines_in
    SAVINGS.setdefault(sample["rule"], []).append(
        (sample["file"], result.lines_in, result.lines_out, result.confidence.label)
    )
    assert saved >= sample["min_savings"], f"{saved:.1f}% saved"
    for needle in sample["must_keep"]:
        assert needle in result.text, needle
    assert result.stats_line is not None
    assert result.stats_line.startswith(f"[shell] {result.lines_in} lines -> ")
    snapshot = SNAPSHOTS / sample["file"]
    if UPDATE:
        snapshot.write_text(result.text + "\n")
    assert snapshot.exists(), f"no snapshot for {sample['file']}: run with ACPD_UPDATE_SNAPSHOTS=1"
    assert result.text + "\n" == snapshot.read_text()


def test_every_builtin_rule_has_a_sample(filters: FilterSet) -> None:
    covered = {s["rule"] for s in SAMPLES}
    assert {r.name for r in filters.rules} - covered == set()


def test_filtering_is_idempotent_enough(filters: FilterSet) -> None:
    # Filtering already-filtered output must not lose the lines the first pass kept.
    for sample in SAMPLES:
        raw = (FIXTURES / sample["file"]).read_text()
        once = filters.apply(sample["command"], raw, sample["exit_code"]).text
        twice = filters.apply(sample["command"], once, sample["exit_code"]).text
        for needle in sample["must_keep"]:
            assert needle in twice, (sample["file"], needle)
