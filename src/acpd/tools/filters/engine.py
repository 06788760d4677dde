"""The filter set: rules compiled once, applied to one tool output at a time.

sanitize -> the first enabled rule matching the command's last segment (its stages in order,
worst confidence kept) -> security lines the filter removed re-appended -> secrets redacted
(filtered text and raw text) with a warning line -> stats line when lines were removed.
The literal triggers of both security passes are found in one substring pass over the
sanitised text (plus one over the raw text when sanitising changed it); a pass whose triggers
are absent is skipped.
A FilterSet is immutable; reloading builds a new one (`build_filter_set`) that the caller
publishes by one reference assignment.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from acpd.tools.filters.config import (
    Parsed,
    Rule,
    builtin_text,
    merge,
    parse_rules,
    read_filters_file,
)
from acpd.tools.filters.matching import last_segment
from acpd.tools.filters.metrics import FilterMetrics
from acpd.tools.filters.preserve import TRIGGERS as PRESERVE_TRIGGERS
from acpd.tools.filters.preserve import find_preserved
from acpd.tools.filters.sanitize import sanitize_output
from acpd.tools.filters.strategies import Budget, FilterTimeoutError
from acpd.tools.filters.substrings import SubstringSet
from acpd.tools.filters.types import FilterConfidence, FilterResult, worst
from acpd.tools.secrets import (
    SecretFinding,
    SecretScanner,
    custom_patterns,
    merge_findings,
    warning_line,
)

log = logging.getLogger("acpd.tools.filters")

BASE_BUDGET_S = 1.0
BUDGET_BYTES_PER_S = 2_000_000
"""A rule may take 1 s plus 1 s per 2 MB of output (25x below the measured common-rule rate)."""


@dataclass(frozen=True, slots=True)
class FilterSettings:
    """`[tools.filters]` and `[tools.filters.security]` from the daemon config."""

    enabled: bool = True
    filters_path: str | None = None
    disabled: frozenset[str] = frozenset()
    security_enabled: bool = True
    extra_patterns: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FilterSet:
    rules: tuple[Rule, ...]
    scanner: SecretScanner | None
    enabled: bool = True
    warnings: tuple[str, ...] = ()
    """Problems met while loading (skipped rules, oversize file): show them to the user."""
    metrics: FilterMetrics = field(default_factory=FilterMetrics)
    file_rejected: bool = False
    """The user's filters.toml was there but could not be used at all (too large, unreadable,
    not TOML, not one usable rule in it): these are the built-in rules. A reload keeps the set
    in force instead."""
    needles: SubstringSet = field(init=False, repr=False, compare=False)
    """The preserved-line triggers and the scanner's, searched for together."""

    def __post_init__(self) -> None:
        secret = self.scanner.triggers if self.scanner is not None else frozenset()
        object.__setattr__(self, "needles", SubstringSet(PRESERVE_TRIGGERS | secret))

    def match(self, command: str) -> Rule | None:
        if not self.enabled:
            return None
        segment = last_segment(command)
        for rule in self.rules:
            if rule.enabled and rule.matcher.matches(segment):
                return rule
        return None

    def apply(
        self, command: str, output: str, exit_code: int | None = None, *, tool: str = "shell"
    ) -> FilterResult:
        """Filter one output. Never raises for any output or command."""
        lines_in = _count_lines(output)
        clean = sanitize_output(output)
        present = self.needles.present(clean)
        lines = clean.splitlines()
        rule = self.match(command)
        confidence = FilterConfidence.FULL
        notes: list[str] = []
        if rule is not None and self.metrics.is_tripped(rule.name):
            rule = None
        if rule is not None:
            lines, confidence, note = self._run(rule, lines, len(clean))
            notes.extend(note)
        preserved: list[str] = []
        if rule is not None and len(lines) < lines_in:
            # Error lines of a failing command are re-appended only when the filter was not
            # sure of itself; a parser that understood the output (Full) already kept them.
            failed = exit_code not in (None, 0) and confidence is not FilterConfidence.FULL
            security = not PRESERVE_TRIGGERS.isdisjoint(present)
            if security or failed:
                preserved = find_preserved(clean, lines, failed=failed, security=security)
            if preserved:
                lines = [*lines, "[lines kept by the security pass]", *preserved]
        if rule is not None:
            self.metrics.record(rule.name, lines_in, len(lines), confidence)
        text = "\n".join(lines)
        del lines
        raw_redacted: str | None = None
        findings: list[SecretFinding] = []
        scanner = self.scanner
        if scanner is not None:
            # Both texts are scanned: the raw text keeps what sanitising cut (a secret in an
            # overwritten progress line), the filtered text can join what an escape sequence
            # split. Each scan is one substring pass unless a trigger occurs.
            raw_present = present if clean is output else scanner.present(output)
            redacted_raw, findings = scanner.scan(output, raw_present)
            if findings:
                raw_redacted = redacted_raw
            del redacted_raw
            text, text_findings = scanner.scan(text)
            findings = merge_findings(findings, text_findings)
        lines_out = _count_lines(text)
        warnings = [*notes]
        warning = warning_line(findings)
        if warning:
            warnings.append(warning)
        if warnings:
            text = f"{text}\n" + "\n".join(warnings) if text else "\n".join(warnings)
        stats = None
        if rule is not None and lines_out < lines_in:
            pct = 100.0 * (lines_in - lines_out) / lines_in
            stats = f"[{tool}] {lines_in} lines -> {lines_out} lines, {pct:.1f}% filtered"
        return FilterResult(
            text=text,
            confidence=confidence,
            rule_name=rule.name if rule is not None else None,
            lines_in=lines_in,
            lines_out=lines_out,
            stats_line=stats,
            warnings=tuple(warnings),
            secret_kinds=tuple(f.kind for f in findings),
            raw_redacted=raw_redacted,
            preserved=tuple(preserved),
        )

    def _run(
        self, rule: Rule, lines: list[str], size: int
    ) -> tuple[list[str], FilterConfidence, list[str]]:
        budget = Budget(BASE_BUDGET_S + size / BUDGET_BYTES_PER_S)
        confidence = FilterConfidence.FULL
        current = lines
        try:
            for stage in rule.stages:
                result = stage.apply(current, budget)
                current, confidence = result.lines, worst(confidence, result.confidence)
        except FilterTimeoutError:
            self.metrics.record_timeout(rule.name)
            log.warning("filter rule %r ran out of time and is now skipped", rule.name)
            note = f"[filter] rule {rule.name!r} took too long; the output is shown unfiltered"
            return lines, FilterConfidence.FALLBACK, [note]
        except Exception:  # a strategy bug must not lose the output
            log.exception("filter rule %r failed", rule.name)
            return lines, FilterConfidence.FALLBACK, []
        return current, confidence, []


def _count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def build_filter_set(
    user_text: str | None = None,
    *,
    user_source: str = "filters.toml",
    settings: FilterSettings | None = None,
    metrics: FilterMetrics | None = None,
    extra_warnings: Iterable[str] = (),
) -> FilterSet:
    """A new immutable filter set: the embedded rules, overridden by `user_text` (a
    filters.toml document), switched by `settings`. Never raises: problems are in `.warnings`.
    """
    settings = settings or FilterSettings()
    warnings = list(extra_warnings)
    builtin = parse_rules(builtin_text(), "built-in filters.toml")
    warnings.extend(builtin.warnings)
    user = parse_rules(user_text, user_source) if user_text is not None else None
    rejected = False
    if user is not None:
        warnings.extend(user.warnings)
        if not user.rules and not user.toggles and user.warnings:
            user, rejected = None, True  # an unusable file: defaults kept
    rules, merge_warnings = merge(builtin.rules, user or Parsed(), settings.disabled)
    warnings.extend(merge_warnings)
    scanner = None
    if settings.security_enabled:
        extra, pattern_warnings = custom_patterns(settings.extra_patterns)
        warnings.extend(pattern_warnings)
        scanner = SecretScanner(extra)
    for w in warnings:
        log.warning("%s", w)
    return FilterSet(
        tuple(rules), scanner, settings.enabled, tuple(warnings), metrics or FilterMetrics(),
        rejected,
    )


def filters_file(settings: FilterSettings, config_dir: str | None) -> str | None:
    """The user's filters.toml: `filters_path`, else filters.toml in the config directory."""
    if settings.filters_path:
        return settings.filters_path
    return os.path.join(config_dir, "filters.toml") if config_dir else None


def load_filter_set(
    settings: FilterSettings | None = None,
    *,
    config_dir: str | None = None,
    metrics: FilterMetrics | None = None,
) -> FilterSet:
    """Read `settings.filters_path` (or `<config_dir>/filters.toml`) and build the set."""
    settings = settings or FilterSettings()
    path = filters_file(settings, config_dir)
    text, warnings = read_filters_file(path) if path else (None, [])
    filters = build_filter_set(
        text,
        user_source=path or "filters.toml",
        settings=settings,
        metrics=metrics,
        extra_warnings=warnings,
    )
    if text is None and warnings:  # there, but too large or unreadable
        filters = replace(filters, file_rejected=True)
    return filters
