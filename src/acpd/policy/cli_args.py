"""The arguments of `acpd policy check|explain|test` (the commands live in `cli.py`).

Kept apart and light: building the CLI parser must not import the policy engine.
"""

from __future__ import annotations

import argparse
from typing import Any

TRUST_CHOICES = ("untrusted", "provisional", "trusted")


def register(sub: Any) -> argparse.ArgumentParser:
    """Add `policy` (with check/explain/test) to an argparse subparsers object."""
    policy: argparse.ArgumentParser = sub.add_parser(
        "policy", help="check commands against the shell policy")
    psub = policy.add_subparsers(dest="policy_command", metavar="ACTION", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", help="policy file layered over the default")
        p.add_argument("--plugins", action="append", default=[],
                       help="plugin directory with overlays (repeatable)")

    check_p = psub.add_parser("check", help="judge one command")
    common(check_p)
    check_p.add_argument("--cwd", help="working directory / workspace (default: .)")
    check_p.add_argument("--trust", choices=TRUST_CHOICES, help="override the trust level")
    check_p.add_argument("--json", action="store_true", help="print the decision as JSON")
    check_p.add_argument("--sandboxed", action="store_true",
                         help="judge as if the command runs in the kernel sandbox")
    check_p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND...")

    explain_p = psub.add_parser("explain", help="show the merged policy and rule sources")
    common(explain_p)
    explain_p.add_argument("--json", action="store_true")

    test_p = psub.add_parser("test", help="run a JSONL corpus and print the rates")
    common(test_p)
    test_p.add_argument("file", help="corpus file (one JSON object a line)")
    test_p.add_argument("--verbose", "-v", action="store_true", help="print failing lines")
    return policy
