"""test_summary: failures and the final summary of a test run, the passing noise dropped.

Runners: cargo test, cargo nextest, pytest, go test, jest, vitest (`runner = "auto"` detects
from the output). Anything a parser does not recognise as passing noise is kept: a filter that
hides a compile error is worse than one that saves fewer lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from acpd.tools.filters.strategies.base import (
    Budget,
    Builder,
    check_keys,
    choice_param,
    int_param,
    omitted,
)
from acpd.tools.filters.types import FilterConfidence, StageResult

FULL, PARTIAL, FALLBACK = FilterConfidence.FULL, FilterConfidence.PARTIAL, FilterConfidence.FALLBACK
RUNNERS = ("auto", "cargo", "nextest", "pytest", "go", "jest", "vitest")

Parsed = tuple[list[str], bool]
"""(kept lines, whether the runner's summary was found)."""

# --- cargo test -------------------------------------------------------------------------------

_CARGO_NOISE = re.compile(
    r"^test .+ \.\.\. (?:ok|ignored(?:, .*)?)$"
    r"|^\s*(?:Compiling|Checking|Downloaded|Downloading|Blocking|Updating|Locking|Adding|Fresh"
    r"|Documenting|Finished|Running|Doc-tests|Locked|Unpacking)\b"
    r"|^running \d+ tests?$"
    r"|^test result: ok\. 0 passed; 0 failed; 0 ignored; 0 measured; \d+ filtered out.*$"
    r"|^\s*$"
    # Backtrace frames inside the standard library and the test harness.
    r"|^\s+\d+: (?:core|std|alloc|test|__rustc)::|^\s+\d+: <.+ as core::ops::|^\s+at /rustc/"
    r"|^note: Some details are omitted|^\s+\d+: \S+::\{\{closure\}\}$"
)
_CARGO_SUMMARY = re.compile(
    r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored"
)
_NEXTEST_NOISE = re.compile(
    r"^\s*(?:PASS|SKIP|START|SLOW) \[|^\s*(?:Compiling|Checking|Downloaded|Downloading|Blocking"
    r"|Updating|Locking|Adding|Fresh|Finished)\b|^\s*Starting \d+ tests? across|^\s*-{3,}\s*$"
    r"|^\s*$"
)
_NEXTEST_SUMMARY = re.compile(r"^\s*Summary \[")


def _cargo(lines: list[str], budget: Budget) -> Parsed:
    out: list[str] = []
    totals = [0, 0, 0]
    suites = 0
    last_summary = ""
    for line in lines:
        summary = _CARGO_SUMMARY.match(line)
        if summary:
            suites += 1
            last_summary = line
            totals = [t + int(summary.group(i)) for t, i in zip(totals, (2, 3, 4), strict=True)]
            if summary.group(1) == "FAILED":
                out.append(line)
            continue
        if not _CARGO_NOISE.match(line):
            out.append(line)
    if suites == 1 and last_summary not in out:
        out.append(last_summary)
    elif suites > 1:
        verdict = "FAILED" if totals[1] else "ok"
        out.append(
            f"test result: {verdict}. {totals[0]} passed; {totals[1]} failed; "
            f"{totals[2]} ignored ({suites} test binaries)"
        )
    return out, suites > 0


def _nextest(lines: list[str], budget: Budget) -> Parsed:
    out = [line for line in lines if not _NEXTEST_NOISE.match(line)]
    return out, any(_NEXTEST_SUMMARY.match(line) for line in out)


# --- pytest -----------------------------------------------------------------------------------

_PYTEST_SECTION = re.compile(r"^=+ (.*?) =+$")
_PYTEST_FINAL = re.compile(
    r"^=+ .*\b(?:passed|failed|error|errors|skipped|no tests ran)\b.* in [\d.]+s"
)
_PYTEST_PROGRESS = re.compile(
    r"^\S+\.py [.sxFE]+\s*(?:\[\s*\d+%\])?$|^[.sxFE]+\s*(?:\[\s*\d+%\])?$"
)
_PYTEST_VERBOSE_OK = re.compile(r"^\S+::\S.* (?:PASSED|SKIPPED|XFAIL|XPASS)\b")
_PYTEST_HEADER = re.compile(
    r"^(?:platform |cachedir: |rootdir: |configfile: |plugins: |collecting |collected \d+ items?"
    r"|timeout: |asyncio: |hypothesis profile |Using --randomly-seed)"
)
_KEEP_SECTIONS = ("FAILURES", "ERRORS", "short test summary info")


def _pytest(lines: list[str], budget: Budget) -> Parsed:
    out: list[str] = []
    section = ""
    final = False
    for line in lines:
        header = _PYTEST_SECTION.match(line)
        if header:
            if _PYTEST_FINAL.match(line):
                out.append(line)
                final = True
                section = ""
                continue
            section = header.group(1).strip()
            if section.startswith(_KEEP_SECTIONS) or section.startswith("ERROR"):
                out.append(line)
            continue
        if section.startswith(_KEEP_SECTIONS) or section.startswith("ERROR"):
            out.append(line)
            continue
        if section in ("test session starts", "") or section.startswith("warnings summary"):
            if section.startswith("warnings summary"):
                continue
            if _PYTEST_HEADER.match(line) or _PYTEST_PROGRESS.match(line):
                continue
            if _PYTEST_VERBOSE_OK.match(line) or not line.strip():
                continue
            out.append(line)
            continue
        # other sections (captured logs of passing tests, coverage, ...): dropped
    return out, final


# --- go test ----------------------------------------------------------------------------------

_GO_RUN = re.compile(r"^=== (?:RUN|PAUSE|CONT|NAME)\s")
_GO_PASS = re.compile(r"^\s*--- (?:PASS|SKIP): ")
_GO_FAIL = re.compile(r"^\s*--- FAIL: ")
_GO_PKG = re.compile(r"^(ok|FAIL|\?)\s+\S+")


def _go(lines: list[str], budget: Budget) -> Parsed:
    out: list[str] = []
    pending: list[str] = []  # output of the running test, kept only if it fails
    summary = False
    for line in lines:
        if _GO_RUN.match(line):
            pending = []
            continue
        if _GO_PASS.match(line):
            pending = []
            continue
        if _GO_FAIL.match(line):
            out.extend(pending)
            pending = []
            out.append(line)
            continue
        pkg = _GO_PKG.match(line)
        if pkg:
            out.extend(pending)
            pending = []
            summary = True
            if pkg.group(1) != "?":
                out.append(line)
            continue
        if line in ("PASS", ""):
            continue
        if line.startswith(("    ", "\t")) and out[-1:] != ["FAIL"]:
            pending.append(line)
            continue
        out.extend(pending)
        pending = []
        out.append(line)
    out.extend(pending)
    return out, summary


# --- jest / vitest ----------------------------------------------------------------------------

_JEST_NOISE = re.compile(
    r"^\s*PASS\s+\S|^\s*[✓√]\s|^\s*○\s|^\s*(?:Ran all test suites|Snapshots:\s+0 total)"
    r"|^\s*$"
)
_JEST_SUMMARY = re.compile(r"^\s*Tests:\s+.*\btotal\b")
_VITEST_NOISE = re.compile(r"^\s*[✓√]\s|^\s*↓\s|^\s*RUN\s+v\d|^\s*(?:Start at|Duration)\s|^\s*$")
_VITEST_SUMMARY = re.compile(r"^\s*Tests\s+.*\(\d+\)")


def _jest(lines: list[str], budget: Budget) -> Parsed:
    out = [line for line in lines if not _JEST_NOISE.match(line)]
    return out, any(_JEST_SUMMARY.match(line) for line in out)


def _vitest(lines: list[str], budget: Budget) -> Parsed:
    out = [line for line in lines if not _VITEST_NOISE.match(line)]
    return out, any(_VITEST_SUMMARY.match(line) for line in out)


_PARSERS: dict[str, Callable[[list[str], Budget], Parsed]] = {
    "cargo": _cargo,
    "nextest": _nextest,
    "pytest": _pytest,
    "go": _go,
    "jest": _jest,
    "vitest": _vitest,
}


def detect_runner(lines: list[str]) -> str | None:
    sample = lines[-400:] + lines[:100]
    for line in sample:
        if _CARGO_SUMMARY.match(line):
            return "cargo"
        if _NEXTEST_SUMMARY.match(line):
            return "nextest"
        if _PYTEST_FINAL.match(line) or (line.startswith("platform ") and " pytest-" in line):
            return "pytest"
        if _VITEST_SUMMARY.match(line) or line.lstrip().startswith("RUN  v"):
            return "vitest"
        if _JEST_SUMMARY.match(line):
            return "jest"
        if _GO_PKG.match(line) and "\t" in line:
            return "go"
    return None


@dataclass(frozen=True, slots=True)
class TestSummary:
    """Failures and the summary kept, passing tests dropped. Full when the runner's summary was
    found, Partial when only failures were, Fallback (output kept) when nothing was recognised.
    """

    runner: str
    max_lines: int
    type_name: str = "test_summary"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> TestSummary:
        check_keys(table, {"runner", "max_lines"})
        return cls(
            choice_param(table, "runner", RUNNERS), int_param(table, "max_lines", 400, minimum=20)
        )

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        budget.check()
        runner = detect_runner(lines) if self.runner == "auto" else self.runner
        if runner is None:
            return StageResult(lines, FALLBACK)
        out, summary = _PARSERS[runner](lines, budget)
        budget.check()
        if not summary:
            return StageResult(lines, FALLBACK)
        if len(out) > self.max_lines:
            # Failures first, the summary last: keep the start of the failures and the end.
            head = self.max_lines * 3 // 4
            tail = self.max_lines - head
            out = [*out[:head], omitted(len(out) - head - tail), *out[-tail:]]
            return StageResult(out, PARTIAL)
        return StageResult(out, FULL)


BUILDERS: dict[str, Builder] = {"test_summary": TestSummary.build}
