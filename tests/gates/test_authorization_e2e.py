"""OAP authorization rules through the real daemon: merged after the policy, they tighten
(deny, ask) and never loosen; each match is in the audit line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.client import RecordingClient, always
from tests.gates.daemon import call, run_turns, shown

pytestmark = pytest.mark.anyio

RULES = """
[tools.authorization]
enabled = true
[[tools.authorization.rules]]
effect = "deny"
tool = "bash"
args_match = "\\\\bprintf\\\\b"
[[tools.authorization.rules]]
effect = "ask"
tool = "read"
paths = ["*/src/*"]
[[tools.authorization.rules]]
effect = "allow"
tool = "bash"
args_match = "curl"
"""


@pytest.mark.parametrize("command", [
    "printf x > p.txt", "pr''intf x > p.txt", "pr\\intf x > p.txt", "pri\\\nntf x > p.txt",
    'p"rintf" x > p.txt',
])
async def test_a_deny_rule_denies_whatever_the_spelling(
    command: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("bash", command=command), {"text": "done"},
    ], RULES)
    assert not (workspace / "p.txt").exists()
    (line,) = done.lines
    assert line["decision"] == "deny" and line["decided_by"] == "authorization"
    assert line["gates"]["authorization"] == [{"rule": 1, "effect": "deny", "tool": "bash"}]
    assert "[tools.authorization] rule 1" in shown(done.finals()[0])


async def test_an_ask_rule_asks_and_an_allow_rule_loosens_nothing(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    client = RecordingClient(answer=always("reject_once"))
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("read", path="src/main.py"), call("read", path="hello.txt"),
        call("bash", command="curl -s https://example.com -o got.txt"), {"text": "done"},
    ], RULES, client=client)
    (asked,) = client.calls("session/request_permission")
    assert asked["toolCall"]["rawInput"] == {"path": "src/main.py"}
    src, hello, curl = done.lines
    assert src["decision"] == "ask" and src["answer"] == "reject_once"
    assert src["gates"]["authorization"][0]["effect"] == "ask"
    assert hello["decision"] == "allow" and hello["gates"] is None
    # The shell policy denies curl; the allow rule does not lift it (and is not consulted:
    # a denied call goes through no gate).
    assert curl["decision"] == "deny" and curl["decided_by"] == "policy"
    assert not (workspace / "got.txt").exists()


async def test_disabled_rules_do_nothing(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = RULES.replace("enabled = true", "enabled = false")
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("bash", command="printf x > p.txt"), {"text": "done"},
    ], config)
    assert (workspace / "p.txt").read_text() == "x"
    assert done.lines[0]["gates"] is None
