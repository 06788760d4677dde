"""filters.toml: parse, validate and merge rules. Invalid rules are skipped with a warning."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpd.readcap import read_upto
from acpd.tools.filters.matching import CommandMatcher, MatchKind
from acpd.tools.filters.strategies import Strategy, build_strategy

MAX_FILE_BYTES = 1 << 20
MAX_RULES = 500
_RULE_KEYS = {"name", "match", "strategy", "enabled", "description"}


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    matcher: CommandMatcher
    stages: tuple[Strategy, ...]
    enabled: bool = True
    source: str = "builtin"


@dataclass(frozen=True, slots=True)
class Toggle:
    """A rule entry with only `name` and `enabled`: switch a rule defined elsewhere."""

    name: str
    enabled: bool


@dataclass(slots=True)
class Parsed:
    rules: list[Rule] = field(default_factory=list)
    toggles: list[Toggle] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_filters_file(path: str | os.PathLike[str]) -> tuple[str | None, list[str]]:
    """The file's text, or None with a warning when it is missing, too large or unreadable."""
    try:
        size = os.stat(path).st_size
        if size > MAX_FILE_BYTES:
            return None, [
                f"{path}: {size} bytes is over the {MAX_FILE_BYTES}-byte limit; "
                "using the built-in filters"
            ]
        with open(path, "rb") as f:
            data = read_upto(f, MAX_FILE_BYTES)
    except FileNotFoundError:
        return None, []
    except OSError as exc:
        return None, [f"{path}: cannot read ({exc.strerror or exc}); using the built-in filters"]
    if len(data) > MAX_FILE_BYTES:
        return None, [f"{path}: over the {MAX_FILE_BYTES}-byte limit; using the built-in filters"]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        return None, [f"{path}: not UTF-8; using the built-in filters"]


def builtin_text() -> str:
    return (Path(__file__).resolve().parents[2] / "data" / "filters.toml").read_text("utf-8")


def parse_rules(text: str, source: str) -> Parsed:
    """Parse one filters.toml. Never raises: problems become warnings; a document that is too
    large or not TOML yields no rules at all."""
    parsed = Parsed()
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        parsed.warnings.append(f"{source}: over the {MAX_FILE_BYTES}-byte limit; ignored")
        return parsed
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        parsed.warnings.append(f"{source}: not valid TOML ({exc}); ignored")
        return parsed
    for key in sorted(set(doc) - {"rules"}):
        parsed.warnings.append(f"{source}: unknown top-level key {key!r} ignored")
    entries = doc.get("rules", [])
    if not isinstance(entries, list):
        parsed.warnings.append(f"{source}: `rules` must be an array of tables ([[rules]])")
        return parsed
    seen: set[str] = set()
    for index, entry in enumerate(entries[:MAX_RULES], 1):
        where = f"{source}: rule #{index}"
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            where = f"{source}: rule {entry['name']!r}"
        try:
            item = _parse_entry(entry, source)
        except ValueError as exc:
            parsed.warnings.append(f"{where} skipped: {exc}")
            continue
        if item.name in seen:
            parsed.warnings.append(f"{where} skipped: duplicate name")
            continue
        seen.add(item.name)
        if isinstance(item, Toggle):
            parsed.toggles.append(item)
        else:
            parsed.rules.append(item)
    if len(entries) > MAX_RULES:
        parsed.warnings.append(f"{source}: only the first {MAX_RULES} rules were read")
    return parsed


def _parse_entry(entry: Any, source: str) -> Rule | Toggle:
    """Raises ValueError (including UnsafePatternError) describing the first problem."""
    if not isinstance(entry, dict):
        raise ValueError("a rule must be a table")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise ValueError("`name` must be a non-empty string of at most 100 characters")
    unknown = sorted(set(entry) - _RULE_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ValueError("`enabled` must be true or false")
    if "match" not in entry and "strategy" not in entry:
        return Toggle(name, enabled)
    matcher = _parse_match(entry.get("match"))
    raw_strategy = entry.get("strategy")
    tables = raw_strategy if isinstance(raw_strategy, list) else [raw_strategy]
    if not tables or not all(isinstance(t, Mapping) for t in tables):
        raise ValueError("`strategy` must be a table (or an array of tables run in order)")
    stages = tuple(build_strategy(t) for t in tables if isinstance(t, Mapping))
    return Rule(name, matcher, stages, enabled, source)


def _parse_match(value: Any) -> CommandMatcher:
    if not isinstance(value, Mapping):
        raise ValueError("`match` must be a table with one of exact, prefix, regex")
    kinds: list[MatchKind] = [k for k in ("exact", "prefix", "regex") if k in value]
    extra = sorted(set(value) - {"exact", "prefix", "regex"})
    if extra:
        raise ValueError(f"unknown match key(s) {', '.join(extra)}")
    if len(kinds) != 1:
        raise ValueError("exactly one of match.exact, match.prefix, match.regex must be set")
    kind = kinds[0]
    pattern = value[kind]
    if not isinstance(pattern, str):
        raise ValueError(f"match.{kind} must be a string")
    return CommandMatcher.build(kind, pattern)


def merge(
    builtin: list[Rule], user: Parsed, disabled: frozenset[str]
) -> tuple[list[Rule], list[str]]:
    """User rules replace built-ins of the same name in place; new user rules come first (they
    win over a built-in matching the same command); toggles and `disabled` switch by name."""
    warnings: list[str] = []
    by_name = {r.name: r for r in user.rules}
    rules = [by_name.pop(r.name, r) for r in builtin]
    rules = [r for r in user.rules if r.name in by_name] + rules
    toggles = {t.name: t.enabled for t in user.toggles}
    known = {r.name for r in rules}
    for name in sorted((set(toggles) | disabled) - known):
        warnings.append(f"no filter rule named {name!r} to enable or disable")
    out: list[Rule] = []
    for rule in rules:
        enabled = toggles.get(rule.name, rule.enabled) and rule.name not in disabled
        if enabled != rule.enabled:
            rule = Rule(rule.name, rule.matcher, rule.stages, enabled, rule.source)
        out.append(rule)
    return out, warnings
