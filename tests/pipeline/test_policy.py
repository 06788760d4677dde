"""Permission rules (strictest wins, a rule never lifts a deny) and persisted approvals."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from acpd.tools.approvals import ApprovalBook, write_atomic
from acpd.tools.builtin import core_registry
from acpd.tools.permissions import ToolPolicy, approval_key
from acpd.tools.rules import RuleSet
from acpd.tools.spec import ToolSpec
from tests.pipeline.conftest import RigFactory

pytestmark = pytest.mark.anyio
REG = core_registry()


def spec(name: str) -> ToolSpec:
    found = REG.resolve(name)
    assert found is not None
    return found


def verdict(policy: ToolPolicy, name: str, mode: str, args: dict[str, object],
            remembered: dict[str, bool] | None = None) -> str:
    s = spec(name)
    decision = policy.decide(s, mode, args, "/ws", remembered or {}, approval_key(s, args))
    return decision.verdict


def test_strictest_matching_rule_wins_whatever_the_order() -> None:
    for order in ([("git *", "allow"), ("*push*", "ask"), ("*--force*", "deny")],
                  [("*--force*", "deny"), ("*push*", "ask"), ("git *", "allow")]):
        policy = ToolPolicy(rules=RuleSet({"bash": order}))  # type: ignore[dict-item]
        assert verdict(policy, "bash", "ask", {"command": "git status"}) == "allow"
        assert verdict(policy, "bash", "auto", {"command": "git push"}) == "ask"
        assert verdict(policy, "bash", "auto", {"command": "git push --force"}) == "deny"
        assert verdict(policy, "bash", "ask", {"command": "make"}) == "ask"
        assert verdict(policy, "bash", "auto", {"command": "make"}) == "allow"


def test_patterns_match_case_insensitively() -> None:
    policy = ToolPolicy(rules=RuleSet({"core__bash": [("*SUDO*", "deny")]}))
    assert verdict(policy, "bash", "auto", {"command": "Sudo rm -rf /"}) == "deny"


def test_a_rule_never_overrides_a_deny() -> None:
    allow_all = ToolPolicy(rules=RuleSet({"write": [("*", "allow")], "bash": [("*", "allow")]}))
    assert verdict(allow_all, "write", "read-only", {"path": "a"}) == "deny"
    assert verdict(allow_all, "bash", "read-only", {"command": "ls"}) == "deny"
    both = ToolPolicy(rules=RuleSet({"bash": [("ls*", "allow"), ("*", "deny")]}))
    assert verdict(both, "bash", "auto", {"command": "ls"}) == "deny"
    # Nor does an "always allow" the user gave before the rule was written.
    key = approval_key(spec("bash"), {"command": "ls"})
    assert verdict(both, "bash", "auto", {"command": "ls"}, {key: True}) == "deny"


def test_an_always_allow_answers_an_ask_rule_but_always_reject_wins() -> None:
    policy = ToolPolicy(rules=RuleSet({"bash": [("*", "ask")]}))
    key = approval_key(spec("bash"), {"command": "ls"})
    assert verdict(policy, "bash", "auto", {"command": "ls"}) == "ask"
    assert verdict(policy, "bash", "auto", {"command": "ls"}, {key: True}) == "allow"
    assert verdict(policy, "bash", "auto", {"command": "ls"}, {key: False}) == "deny"


def test_path_rules_see_normalised_paths_and_both_ends_of_a_move() -> None:
    policy = ToolPolicy(rules=RuleSet({"read": [("secrets/*", "deny")],
                                       "move_path": [("/ws/keep/*", "deny")]}))
    for path in ("secrets/a", "./secrets/a", "src/../secrets/a", "/ws/secrets/a",
                 "SECRETS/a"):
        assert verdict(policy, "read", "auto", {"path": path}) == "deny", path
    assert verdict(policy, "read", "auto", {"path": "src/a"}) == "allow"
    move: dict[str, object] = {"source": "tmp/x", "destination": "keep/x"}
    assert verdict(policy, "move_path", "auto", move) == "deny"


def test_deny_star_hides_the_tool_and_the_hash_changes_with_rules() -> None:
    policy = ToolPolicy(rules=RuleSet({"bash": [("*", "deny")]}))
    assert not policy.visible(spec("bash"), "auto")
    assert policy.visible(spec("read"), "auto")
    assert policy.policy_hash("ask") != ToolPolicy().policy_hash("ask")
    assert policy.policy_hash("ask") != policy.policy_hash("auto")


async def test_a_deny_rule_through_the_runner_shows_its_reason(rig: RigFactory) -> None:
    r = rig(mode="auto", rules={"bash": [("*rm *", "deny")]})
    result = await r.call("bash", {"command": "rm -rf x"})
    assert result.error is not None and "*rm *" in result.error.message
    assert r.observer.statuses() == ["pending", "failed"]
    assert r.audit()[0]["decided_by"] == "rule"
    allowed = rig(mode="ask", rules={"bash": [("echo *", "allow")]})
    assert (await allowed.call("bash", {"command": "echo hi"})).error is None
    assert allowed.observer.asked == [] and allowed.audit()[-1]["approved_by"] == "rule"


# --- persisted approvals -------------------------------------------------------------------


def test_approvals_persist_atomically_0600_and_reload(tmp_path: Path) -> None:
    directory = tmp_path / "approvals"
    book = ApprovalBook(directory)
    approvals = book.for_workspace(str(tmp_path))
    approvals.set("core__bash#abc", True)
    (path,) = directory.iterdir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    inode = path.stat().st_ino
    approvals.set("core__write", False)
    assert path.stat().st_ino != inode, "replaced by rename, not rewritten in place"
    assert [p.name for p in directory.iterdir()] == [path.name], "no temp file left"
    fresh = ApprovalBook(directory).for_workspace(str(tmp_path))
    assert fresh.answers == {"core__bash#abc": True, "core__write": False}
    other = ApprovalBook(directory).for_workspace(str(tmp_path / "elsewhere"))
    assert other.answers == {}


def test_a_file_writable_by_others_is_ignored(tmp_path: Path) -> None:
    book = ApprovalBook(tmp_path)
    book.for_workspace("/ws").set("core__bash", True)
    (path,) = tmp_path.glob("*.json")
    os.chmod(path, 0o666)
    assert ApprovalBook(tmp_path).for_workspace("/ws").answers == {}


def test_an_interrupted_write_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.json"
    write_atomic(path, {"answers": {"x": True}})

    def broken(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        write_atomic(path, {"answers": {"x": False}})
    assert json.loads(path.read_text()) == {"answers": {"x": True}}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


async def test_bash_approvals_are_bound_to_the_exact_command(rig: RigFactory) -> None:
    r = rig(answers=["allow_always", "reject_once"])
    assert (await r.call("bash", {"command": "echo one"})).error is None
    assert (await r.call("bash", {"command": "echo one"})).error is None
    refused = await r.call("bash", {"command": "echo one; echo two"})
    assert refused.error is not None
    assert len(r.observer.asked) == 2
