"""A rule's `match` / `not_match` examples, checked when a policy is compiled: an example that
fails is a policy error, so a rule cannot silently stop meaning what its author showed."""

from __future__ import annotations

import json
import os
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpd.policy.engine import CompiledPolicy

_EXAMPLES_OK: dict[tuple[str, str], bool] = {}
"""(rule JSON, command grammar JSON) whose examples held: a rule's examples depend on nothing
else, so a reload only re-checks rules that changed."""


def example_errors(compiled: CompiledPolicy) -> list[str]:
    errors: list[str] = []
    ws = os.path.join(tempfile.gettempdir(), "acpd-policy-examples")
    grammar = json.dumps({k: sorted(v) for k, v in compiled.grammar.items()}, sort_keys=True)
    for cr in compiled.rules:
        if not cr.rule.match and not cr.rule.not_match:
            continue
        key = (cr.rule.model_dump_json(), grammar)
        if key in _EXAMPLES_OK:
            continue
        before = len(errors)
        src = cr.rule.source or "policy"
        for example in cr.rule.match:
            if not compiled.rule_matches(cr, example, ws, (ws,)):
                errors.append(f"{src}: rule {cr.rule.id} does not match its example {example!r}")
        for example in cr.rule.not_match:
            if compiled.rule_matches(cr, example, ws, (ws,)):
                errors.append(f"{src}: rule {cr.rule.id} matches its counter-example {example!r}")
        if len(errors) == before:
            if len(_EXAMPLES_OK) > 10_000:
                _EXAMPLES_OK.clear()
            _EXAMPLES_OK[key] = True
    return errors
