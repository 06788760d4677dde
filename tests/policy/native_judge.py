"""Judge command lines read as JSON on stdin and print the decisions as JSON (test_native.py
runs this twice, once with the compiled judge and once with ACPD_NATIVE=0, and compares)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from acpd.policy import _native
from acpd.policy.engine import compile_policy
from acpd.policy.rules import load_base

EXACT_BUDGET_MS = 10_000.0
"""Large, so that machine speed never turns a verdict into over-budget ask in one run only."""
HOSTILE_BUDGET_MS = 2_000.0
"""For hostile inputs: most are decided within it; one that is not (in either process) is not
compared (a faster judge may finish what the slower one could not)."""


def main() -> None:
    job = json.load(sys.stdin)
    policies = {"default": compile_policy(load_base(None)[0]),
                "reference": compile_policy(load_base(Path(job["reference"]))[0])}
    ws, home = job["workspace"], job["home"]
    exact: list[dict[str, object]] = []
    for policy in policies.values():
        for cmd in job["lines"]:
            for trust in ("provisional", "trusted"):
                for sandboxed in (False, True):
                    d = policy.judge(cmd, cwd=ws, roots=(ws,), home=home, trust=trust,
                                     sandboxed=sandboxed, budget_ms=EXACT_BUDGET_MS)
                    exact.append(d.to_json())
    hostile = [policies["default"].judge(cmd, cwd=ws, roots=(ws,), home=home,
                                         budget_ms=HOSTILE_BUDGET_MS).to_json()
               for cmd in job["hostile"]]
    json.dump({"compiled": _native.compiled(), "exact": exact, "hostile": hostile}, sys.stdout)


if __name__ == "__main__":
    main()
