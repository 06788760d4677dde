"""The regexes written in the filter strategies and the secret scanner stay on Python's `re`
(configured patterns go to RE2). They were reviewed as linear: no nested or overlapping
unbounded quantifiers, anchored where they repeat. This test runs every one of them over long
hostile lines; a backtracking blow-up would not finish (pytest-timeout stops it)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import acpd.tools.filters.strategies as strategies

MODULES = [f"acpd.tools.filters.strategies.{m.name}"
           for m in pkgutil.iter_modules([str(Path(strategies.__file__).parent)])]
MODULES += ["acpd.tools.filters.matching", "acpd.tools.filters.sanitize",
            "acpd.tools.filters.preserve", "acpd.tools.secrets"]
N = 20_000
HOSTILE = ["a" * N, " " * N, "a " * (N // 2), "1." * (N // 2), "--> " * (N // 4),
           "error: " * (N // 7), "x:1:" * (N // 4), "[a" * (N // 2), "\x1b[" * (N // 2),
           "/a" * (N // 2), "  [" * (N // 3), "ab12_-" * (N // 6), "=" * N, "\"'" * (N // 2),
           "AKIA" * (N // 4), "eyJ" * (N // 3), "-----BEGIN " * (N // 11)]


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    found: list[tuple[str, re.Pattern[str]]] = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            items = value if isinstance(value, (tuple, list)) else [value]
            for item in items:
                regex = item if isinstance(item, re.Pattern) else getattr(item, "regex", None)
                if isinstance(regex, re.Pattern):
                    found.append((f"{name}.{attr}", regex))
    return found


def test_builtin_regexes_finish_on_long_hostile_lines() -> None:
    patterns = _patterns()
    assert len(patterns) > 30
    for _name, regex in patterns:
        for text in HOSTILE:
            regex.search(text)
            for _ in regex.finditer(text[:5000]):
                pass
