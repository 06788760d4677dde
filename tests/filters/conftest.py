"""Collects per-rule line savings from the snapshot tests and prints them after the run."""

from __future__ import annotations

from typing import Any

SAVINGS: dict[str, list[tuple[str, int, int, str]]] = {}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not SAVINGS:
        return
    tr = terminalreporter
    tr.write_sep("-", "output filter savings per rule (captured samples)")
    tr.write_line(f"{'rule':16} {'sample':22} {'lines in':>8} {'out':>5} {'saved':>7}  confidence")
    for rule in sorted(SAVINGS):
        for sample, lines_in, lines_out, confidence in SAVINGS[rule]:
            pct = 100.0 * (lines_in - lines_out) / lines_in if lines_in else 0.0
            tr.write_line(
                f"{rule:16} {sample:22} {lines_in:8} {lines_out:5} {pct:6.1f}%  {confidence}"
            )
