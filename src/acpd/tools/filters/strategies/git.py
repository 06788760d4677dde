"""git_status (compact sections) and git_diff (a line budget, file headers always kept)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acpd.tools.filters.strategies.base import CHECK_EVERY, Budget, Builder, check_keys, int_param
from acpd.tools.filters.types import FilterConfidence, StageResult

FULL, PARTIAL, FALLBACK = FilterConfidence.FULL, FilterConfidence.PARTIAL, FilterConfidence.FALLBACK

_SECTIONS = {
    "Changes to be committed:": "Staged",
    "Changes not staged for commit:": "Unstaged",
    "Untracked files:": "Untracked",
    "Unmerged paths:": "Unmerged",
    "Ignored files:": "Ignored",
}
_STATUS_WORDS = {
    "new file": "A",
    "modified": "M",
    "deleted": "D",
    "renamed": "R",
    "copied": "C",
    "typechange": "T",
    "both modified": "UU",
    "both added": "AA",
    "deleted by us": "DU",
    "deleted by them": "UD",
    "added by us": "AU",
    "added by them": "UA",
}
_ENTRY = re.compile(r"^\t(?:([a-z ]+):\s+)?(.+)$")
_PORCELAIN = re.compile(r"^(?:[ MADRCUT?!]{2} \S|## )")


@dataclass(frozen=True, slots=True)
class GitStatus:
    """`git status` in a few lines: branch, tracking, then one line per section with short
    codes (`M a.py`). Hints (`(use "git add" ...)`) go. Short/porcelain output is kept."""

    max_files: int
    type_name: str = "git_status"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> GitStatus:
        check_keys(table, {"max_files"})
        return cls(int_param(table, "max_files", 40, minimum=1))

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        budget.check()
        if lines and all(_PORCELAIN.match(x) for x in lines if x):
            return StageResult(lines, FULL)
        out: list[str] = []
        sections: dict[str, list[str]] = {}
        current: str | None = None
        recognised = False
        for line in lines:
            if line in _SECTIONS:
                current = _SECTIONS[line]
                sections.setdefault(current, [])
                recognised = True
                continue
            if (
                line.startswith("  (use ")
                or line.startswith("  (commit or discard")
                or not line.strip()
            ):
                continue
            entry = _ENTRY.match(line)
            if current is not None and entry:
                word, path = entry.groups()
                code = _STATUS_WORDS.get(word or "", "?" if current == "Untracked" else word or "")
                sections[current].append(f"{code} {path}" if code else path)
                continue
            if line.startswith(
                (
                    "On branch ",
                    "HEAD detached",
                    "Your branch",
                    "nothing to commit",
                    "no changes added",
                )
            ):
                recognised = True
            if line.startswith("no changes added to commit"):
                continue
            current = None
            out.append(line)
        if not recognised:
            return StageResult(lines, FALLBACK)
        for name, entries in sections.items():
            shown = entries[: self.max_files]
            more = f", ... (+{len(entries) - len(shown)} more)" if len(entries) > len(shown) else ""
            out.append(f"{name} ({len(entries)}): " + ", ".join(shown) + more)
        truncated = any(len(e) > self.max_files for e in sections.values())
        return StageResult(out, PARTIAL if truncated else FULL)


_FILE_HEADER = re.compile(
    r"^(?:diff --git |diff --cc |--- |\+\+\+ |rename (?:from|to) |new file mode"
    r"|deleted file mode|similarity index|Binary files )"
)
_COMMIT_HEADER = re.compile(r"^commit [0-9a-f]{7,}")
_INDEX = re.compile(r"^index [0-9a-f]+\.\.[0-9a-f]+")


@dataclass(frozen=True, slots=True)
class GitDiff:
    """At most `max_diff_lines` lines of hunks in all, at most `max_file_lines` per file; file
    headers (`diff --git`, `---`/`+++`, renames, mode changes) and commit headers always kept,
    `index` lines dropped. Partial when hunks were cut."""

    max_diff_lines: int
    max_file_lines: int
    type_name: str = "git_diff"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> GitDiff:
        check_keys(table, {"max_diff_lines", "max_file_lines"})
        total = int_param(table, "max_diff_lines", 500, minimum=1)
        return cls(total, int_param(table, "max_file_lines", total, minimum=1))

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        out: list[str] = []
        used = 0
        in_file = 0
        skipped = 0
        files = 0
        total_skipped = 0

        def close_file() -> None:
            nonlocal skipped, total_skipped
            if skipped:
                out.append(f"... {skipped} diff lines omitted in this file ...")
                total_skipped += skipped
                skipped = 0

        for i, line in enumerate(lines):
            if i % CHECK_EVERY == 0:
                budget.check()
            if line.startswith(("diff --git ", "diff --cc ")) or _COMMIT_HEADER.match(line):
                close_file()
                in_file = 0
                files += line.startswith("diff")
                out.append(line)
                continue
            if _INDEX.match(line):
                continue
            if _FILE_HEADER.match(line) and in_file == 0:
                out.append(line)
                continue
            if used < self.max_diff_lines and in_file < self.max_file_lines:
                out.append(line)
                used += 1
                in_file += 1
            else:
                skipped += 1
                in_file += 1
        close_file()
        if files == 0:
            return StageResult(lines, FALLBACK)
        return StageResult(out, PARTIAL if total_skipped else FULL)


BUILDERS: dict[str, Builder] = {"git_status": GitStatus.build, "git_diff": GitDiff.build}
