"""The utility gate: a model call whose estimated utility is below the threshold is not run.

score = gain*w_gain - cost*w_cost - redundancy*w_redundancy + exploration*w_exploration

  gain         expected information value: 1 for a call not made yet, 0.25 for a repeat of
               an identical call (same tool, same arguments) with nothing changed since;
  cost         estimated tokens of the call itself, per 8000 (capped at 1);
  redundancy   1 when an identical call already ran and no state-changing call ran after it
               (its output is still what the model saw), else the word overlap (Jaccard) of
               the arguments with the closest recent call of the same tool, halved;
  exploration  0.2 when the tool was not called among the session's recent calls.

Rules (the seed's invariants):
  - off by default; user-requested calls are never gated: slash commands, the CLI, and a
    model call whose every argument the user's prompt of this turn spells out ("read
    notes.md again"); nor are `exempt_tools` (load_skill and invoke_skill always);
  - fail-closed: an error while scoring, or a score that is not a finite number, counts as
    low utility: the call is not run and the model is told why;
  - a tool that changes state is never skipped on its score alone (only on a scoring error);
  - the state is per session, in memory, bounded (recent `window` calls, MAX_SESSIONS
    sessions, least recently used dropped first), and forgotten when the conversation gets
    shorter (/clear, a compression): the model no longer has those outputs; it is kept only
    while the gate is on, and dropped when the session is over (closed, deleted).
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

import orjson

from acpd.tools.gates.config import UtilityConfig

MAX_SESSIONS = 1024
MAX_PROMPT_CHARS = 64 * 1024
MIN_EXPLICIT = 3
"""An argument shorter than this is not taken as spelled out by the prompt ("a", "1")."""
TOKENS_PER_UNIT = 8000
CHARS_PER_TOKEN = 4
_WORD = re.compile(r"[A-Za-z0-9_./-]+")


@dataclass(frozen=True, slots=True)
class Score:
    value: float
    gain: float
    cost: float
    redundancy: float
    exploration: float

    def to_json(self) -> dict[str, float]:
        return {"score": round(self.value, 4), "gain": self.gain, "cost": round(self.cost, 4),
                "redundancy": round(self.redundancy, 4), "exploration": self.exploration}


@dataclass(slots=True)
class _Seen:
    tool: str
    digest: bytes
    words: frozenset[str]
    changes_state: bool


@dataclass(slots=True)
class _History:
    calls: deque[_Seen] = field(default_factory=deque)
    conversation: int = 0
    """The conversation's length when the last turn began."""
    prompt: str = ""
    """The user's prompt of the current turn."""


class UtilityScorer:
    def __init__(self, config: UtilityConfig) -> None:
        self.config = config
        self._sessions: OrderedDict[str, _History] = OrderedDict()

    def exempt(self, tool_id: str, name: str) -> bool:
        return any(t in (tool_id, name) for t in self.config.exempt_tools)

    def score(self, session: str, tool: str, args: dict[str, Any]) -> Score:
        """The call's score. Raises (ValueError, TypeError, orjson errors...) when the
        arguments cannot be scored: the caller treats any exception as low utility."""
        digest = _digest(args)
        words = _words(args)
        history = self._history(session)
        w = self.config.weights
        same_tool = [s for s in history.calls if s.tool == tool]
        repeat = _unchanged_repeat(history, tool, digest)
        gain = 0.25 if repeat else 1.0
        cost = min(1.0, len(digest) / CHARS_PER_TOKEN / TOKENS_PER_UNIT)
        if repeat:
            redundancy = 1.0
        else:
            redundancy = max((_jaccard(words, s.words) for s in same_tool), default=0.0) / 2
        exploration = 0.0 if same_tool else 0.2
        value = (w.gain * gain - w.cost * cost - w.redundancy * redundancy
                 + w.exploration * exploration)
        if not math.isfinite(value):
            raise ValueError(f"the score is not a finite number ({value})")
        return Score(value, gain, cost, redundancy, exploration)

    def begin_turn(self, session: str, history_length: int, prompt: str = "") -> None:
        """Forget the calls of a conversation that got shorter (/clear, a compression): the
        model no longer has their outputs. Keep the user's prompt (see `asked_for`)."""
        history = self._history(session)
        if history_length < history.conversation:
            history.calls.clear()
        history.conversation = history_length
        history.prompt = prompt[:MAX_PROMPT_CHARS]

    def asked_for(self, session: str, args: dict[str, Any]) -> bool:
        """The user's prompt of this turn spells out every argument of the call (a path, a
        command): the user asked for it explicitly, and the seed exempts such calls."""
        history = self._sessions.get(session)
        if history is None or not history.prompt or not args:
            return False
        return all(
            isinstance(v, str | int | float) and not isinstance(v, bool)
            and len(str(v)) >= MIN_EXPLICIT and str(v) in history.prompt
            for v in args.values()
        )

    def record(self, session: str, tool: str, args: dict[str, Any], changes_state: bool) -> None:
        """A call ran (or was at least attempted): it counts for the next scores."""
        try:
            seen = _Seen(tool, _digest(args), _words(args), changes_state)
        except (TypeError, ValueError, orjson.JSONEncodeError):
            seen = _Seen(tool, b"", frozenset(), changes_state)
        calls = self._history(session).calls
        calls.append(seen)
        while len(calls) > self.config.window:
            calls.popleft()

    def forget(self, session: str) -> None:
        """The session is over (closed, deleted, its window gone): its calls and prompt go."""
        self._sessions.pop(session, None)

    def _history(self, session: str) -> _History:
        history = self._sessions.get(session)
        if history is None:
            history = self._sessions[session] = _History()
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session)
        return history


def _digest(args: dict[str, Any]) -> bytes:
    # orjson refuses nesting deeper than it can encode: that is a scoring error (fail-closed).
    return orjson.dumps(args, option=orjson.OPT_SORT_KEYS)


def _words(args: dict[str, Any]) -> frozenset[str]:
    return frozenset(_WORD.findall(_digest(args).decode("utf-8", "replace"))[:4096])


def _unchanged_repeat(history: _History, tool: str, digest: bytes) -> bool:
    """An identical call ran and nothing that changes state ran after it."""
    for seen in reversed(history.calls):
        if seen.tool == tool and seen.digest == digest:
            return True
        if seen.changes_state:
            return False
    return False


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
