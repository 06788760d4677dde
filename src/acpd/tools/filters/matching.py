"""Which rule a command belongs to: the last segment of a compound command, cleaned up."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from acpd.tools.filters.safety import compile_pattern

MatchKind = Literal["exact", "prefix", "regex"]

_REDIRECT = re.compile(r"^(?:\d*|&)(?:>>?|<<?|>&|<&|&>)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"time", "command", "exec", "nice", "env", "sudo", "stdbuf", "nohup"})
_MAX_COMMAND_CHARS = 16_384


def last_segment(command: str) -> str:
    """The command whose output we see: after the last `&&`, `||`, `;` or newline, before
    any pipe, without redirections, leading `VAR=value` assignments and `time`/`env` wrappers.

    `cd x && RUST_LOG=1 cargo test 2>&1 | tail -80` gives `cargo test`.
    """
    segments = _split_top_level(command[:_MAX_COMMAND_CHARS])
    segment = next((s for s in reversed(segments) if s.strip()), "")
    words = _words(segment)
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS):
        words.pop(0)
    kept: list[str] = []
    skip_target = False
    for word in words:
        if skip_target:
            skip_target = False
            continue
        redirect = _REDIRECT.match(word)
        if redirect:
            # `2>&1` and `>out` carry their target; `>` alone takes the next word.
            skip_target = redirect.end() == len(word)
            continue
        kept.append(word)
    return " ".join(kept)


def _split_top_level(command: str) -> list[str]:
    """Split on `&&`, `||`, `;`, newlines and cut at the first pipe of each segment, outside
    quotes. Subshell and brace contents are left alone (a best effort, not a shell parser)."""
    segments: list[str] = []
    current: list[str] = []
    quote = ""
    in_pipe = False
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if quote:
            if ch == "\\" and quote == '"' and i + 1 < n:
                if not in_pipe:
                    current.append(command[i : i + 2])
                i += 2
                continue
            if ch == quote:
                quote = ""
            if not in_pipe:
                current.append(ch)
            i += 1
            continue
        two = command[i : i + 2]
        if two in ("&&", "||") or ch in ";\n":
            segments.append("".join(current))
            current, in_pipe = [], False
            i += 2 if two in ("&&", "||") else 1
            continue
        if ch == "|" and not in_pipe:
            in_pipe = True
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            if not in_pipe:
                current.append(command[i : i + 2])
            i += 2
            continue
        if ch in "'\"":
            quote = ch
        if not in_pipe:
            current.append(ch)
        i += 1
    segments.append("".join(current))
    return segments


def _words(segment: str) -> list[str]:
    words: list[str] = []
    current: list[str] = []
    quote = ""
    for ch in segment.strip():
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in " \t":
            if current:
                words.append("".join(current))
                current = []
        else:
            if ch in "'\"":
                quote = ch
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


@dataclass(frozen=True, slots=True)
class CommandMatcher:
    kind: MatchKind
    value: str
    pattern: re.Pattern[str] | None = None

    @classmethod
    def build(cls, kind: MatchKind, value: str) -> CommandMatcher:
        """Raises UnsafePatternError for a bad `regex` value, ValueError for an empty one."""
        if not value.strip():
            raise ValueError(f"match.{kind} is empty")
        if kind == "regex":
            return cls(kind, value, compile_pattern(value))
        return cls(kind, value.strip())

    def matches(self, segment: str) -> bool:
        """`segment` is already `last_segment(command)`."""
        if self.kind == "exact":
            return segment == self.value
        if self.kind == "prefix":
            return (
                segment == self.value
                or segment.startswith(self.value + " ")
                or (segment.startswith(self.value) and not self.value[-1:].isalnum())
            )
        assert self.pattern is not None
        return self.pattern.search(segment) is not None
