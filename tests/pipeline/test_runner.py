"""Each stage of the runner, in order, with what the editor sees and what the audit says."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.quota import Quota
from acpd.tools.state import SessionTools
from tests.pipeline.conftest import RigFactory

pytestmark = pytest.mark.anyio

REFUSED = ["pending", "failed"]
RAN = ["pending", "in_progress", "completed"]


async def test_an_allowed_call_runs_and_is_audited_before_it_returns(rig: RigFactory) -> None:
    r = rig()
    result = await r.call("probe", {"path": "a"})
    assert result.error is None and result.text == "ok a"
    assert r.observer.statuses() == RAN
    (line,) = r.audit()
    assert line["tool"] == "plugin__probe" and line["name"] == "probe"
    assert line["decision"] == "allow" and line["approved_by"] == "auto"
    assert line["call"] == {"path": "a"} and line["caller"] == "model"
    assert line["exit_code"] is None and line["error_category"] is None
    assert line["session"] == "sess-test" and line["mode"] == "ask"
    assert len(line["policy_hash"]) == 16 and line["attempts"] == 1
    assert result.record is not None and result.record.to_dict()["toolCallId"] == "call-1"
    assert stat.S_IMODE(os.stat(r.audit_path).st_mode) == 0o600


async def test_resolve_unknown_tool(rig: RigFactory) -> None:
    r = rig()
    result = await r.call("nope")
    assert result.error is not None
    assert result.error.category is ErrorCategory.TOOL_NOT_FOUND
    assert r.observer.statuses() == REFUSED
    assert r.audit()[0]["decision"] == "not_found"


async def test_tafc_fields_are_stripped_before_anything_sees_them(rig: RigFactory) -> None:
    r = rig()
    result = await r.call("probe", {"path": "a", "_tafc_think": "SECRET THOUGHT"})
    assert result.error is None and result.text == "ok a"
    assert "SECRET THOUGHT" not in r.audit_path.read_text()
    assert r.observer.views[0]["status"] == "pending"


async def test_only_tafc_fields_is_skipped_without_a_card(rig: RigFactory) -> None:
    r = rig()
    result = await r.call("probe", {"_tafc_think_1": "hmm"})
    assert result.skipped and result.error is None
    assert r.observer.events == []
    assert r.behaviours["probe"].calls == 0
    (line,) = r.audit()
    assert line["decision"] == "skipped" and line["call"] == {}


async def test_invalid_json_is_invalid_parameters(rig: RigFactory) -> None:
    r = rig()
    result = await r.pipeline.run("c", "probe", None, r.env, invalid_json="{oops")
    assert result.error is not None
    assert result.error.category is ErrorCategory.INVALID_PARAMETERS


async def test_not_enabled_is_denied_and_hidden(rig: RigFactory) -> None:
    r = rig(enabled=("core__*",))
    result = await r.call("probe", {"path": "a"})
    assert result.error is not None and "not enabled" in result.error.message
    assert result.error.category is ErrorCategory.POLICY_BLOCKED
    assert "probe" not in [name for name, _ in r.pipeline.catalog("auto")]
    assert r.behaviours["probe"].calls == 0
    assert r.audit()[0]["decided_by"] == "rule"


async def test_quota_blocks_after_the_limit_and_says_so(rig: RigFactory) -> None:
    r = rig(state=SessionTools(quota=Quota(2)))
    assert (await r.call("probe", {"path": "a"})).error is None
    assert (await r.call("probe", {"path": "b"})).error is None
    third = await r.call("probe", {"path": "c"})
    assert third.error is not None and third.error.message.startswith("quota_blocked")
    assert r.observer.statuses()[-2:] == REFUSED
    assert r.behaviours["probe"].calls == 2
    assert r.audit()[-1]["decision"] == "quota_blocked"


async def test_quota_counts_first_attempts_only(rig: RigFactory) -> None:
    r = rig(state=SessionTools(quota=Quota(1)))
    r.behaviours["probe"].errors = [ToolError(ErrorCategory.SERVER_ERROR, "503")]
    result = await r.call("probe")
    assert result.error is None and r.behaviours["probe"].calls == 2
    assert r.env.state.quota.used == 1


async def test_unknown_keys_are_rejected(rig: RigFactory) -> None:
    r = rig()
    result = await r.call("probe", {"path": "a", "mode": "x"})
    assert result.error is not None
    assert result.error.category is ErrorCategory.INVALID_PARAMETERS
    assert "mode" in result.error.message and r.behaviours["probe"].calls == 0


async def test_wrong_types_are_type_mismatch(rig: RigFactory) -> None:
    r = rig()
    result = await r.call("probe", {"path": 3})
    assert result.error is not None and result.error.category is ErrorCategory.TYPE_MISMATCH


async def test_read_only_mode_denies_changes_with_a_failed_card(rig: RigFactory) -> None:
    r = rig(mode="read-only")
    result = await r.call("mutate", {"path": "a"})
    assert result.error is not None and result.error.category is ErrorCategory.POLICY_BLOCKED
    assert r.observer.statuses() == REFUSED and "Blocked:" in r.observer.final_text()
    assert r.observer.asked == []
    line = r.audit()[0]
    assert line["decision"] == "deny" and line["decided_by"] == "mode"
    assert line["approved_by"] is None


@pytest.mark.parametrize(
    ("answer", "ran", "remembered"),
    [("allow_once", True, None), ("allow_always", True, True),
     ("reject_once", False, None), ("reject_always", False, False)],
)
async def test_each_answer(
    rig: RigFactory, answer: str, ran: bool, remembered: bool | None
) -> None:
    r = rig(answers=[answer])
    result = await r.call("mutate", {"path": "a"})
    assert (result.error is None) is ran
    assert r.behaviours["mutate"].calls == (1 if ran else 0)
    assert r.env.approvals.get("plugin__mutate") is remembered
    assert [what for what, _, _ in r.observer.events][:2] == ["tool_call", "ask"]
    line = r.audit()[0]
    assert line["decision"] == "ask" and line["answer"] == answer
    assert line["approved_by"] == ("user" if ran else None)
    again = await r.call("mutate", {"path": "b"})
    if remembered is not None:
        assert len(r.observer.asked) == 1
        assert (again.error is None) is remembered


async def test_nobody_to_ask_is_confirmation_required(rig: RigFactory) -> None:
    r = rig(answers=["unavailable"])
    result = await r.call("net", {"path": "a"})
    assert result.error is not None
    assert result.error.category is ErrorCategory.CONFIRMATION_REQUIRED
    assert r.behaviours["net"].calls == 0


async def test_a_cancelled_answer_is_a_cancelled_call(rig: RigFactory) -> None:
    r = rig(answers=["cancelled"])
    result = await r.call("net", {"path": "a"})
    assert result.error is not None and result.error.category is ErrorCategory.CANCELLED
    assert r.observer.statuses() == REFUSED and r.behaviours["net"].calls == 0
    assert r.audit()[0]["error_category"] == "Cancelled"


async def test_cancellation_during_execution_closes_the_card_and_audits(
    rig: RigFactory, tmp_path: Path
) -> None:
    r = rig(mode="auto")
    with anyio.move_on_after(0.3):
        await r.call("bash", {"command": "sleep 30"})
    assert r.observer.statuses()[-1] == "failed"
    line = r.audit()[-1]
    assert line["error_category"] == "Cancelled" and line["exit_code"] == -1


async def test_timeout_is_classified_and_not_retried_for_a_state_change(
    rig: RigFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acpd.tools import execution

    monkeypatch.setattr(execution, "DEFAULT_TOOL_TIMEOUT", 0.05)
    r = rig(mode="auto")
    r.env.shell_timeout = -29.99  # the runner's own limit: max(0.05, 0.01)

    async def slow(args: object, ctx: object) -> object:
        await anyio.sleep(5)
        raise AssertionError("not reached")

    spec = r.pipeline.registry.resolve("mutate")
    assert spec is not None
    object.__setattr__(spec, "execute", slow)
    result = await r.call("mutate", {"path": "a"})
    assert result.error is not None and result.error.category is ErrorCategory.TIMEOUT
    assert r.audit()[-1]["attempts"] == 1


async def test_a_tool_bug_is_a_permanent_failure(rig: RigFactory) -> None:
    r = rig()
    r.behaviours["probe"].errors = [ZeroDivisionError("boom")]  # type: ignore[list-item]
    result = await r.call("probe")
    assert result.error is not None
    assert result.error.category is ErrorCategory.PERMANENT_FAILURE
    assert "ZeroDivisionError" in result.error.message


async def test_output_validation_refuses_output_that_is_not_json(rig: RigFactory) -> None:
    r = rig()
    r.behaviours["probe"].raw = {"x": object()}
    result = await r.call("probe")
    assert result.error is not None
    assert result.error.category is ErrorCategory.PERMANENT_FAILURE
    assert "not JSON" in result.error.message


async def test_secrets_in_output_are_masked_for_the_model_and_the_log(rig: RigFactory) -> None:
    r = rig()
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    r.behaviours["probe"].text = f"token={token}"
    result = await r.call("probe", {"path": token})
    assert token not in result.text and "REDACTED" in result.text
    assert token not in r.audit_path.read_text()


async def test_redaction_logs_sizes_of_fields_not_on_the_allowlist(rig: RigFactory) -> None:
    r = rig(mode="auto")
    await r.call("write", {"path": "f.txt", "content": "private body"})
    line = r.audit()[-1]
    assert line["call"] == {"path": "f.txt", "content": "[redacted: 12 chars]"}
    assert "private body" not in r.audit_path.read_text()


async def test_shell_audit_has_exit_code_and_truncated(rig: RigFactory) -> None:
    r = rig(mode="auto")
    result = await r.call("bash", {"command": "echo hi; exit 4"})
    assert result.failed and result.error is None
    line = r.audit()[-1]
    assert line["exit_code"] == 4 and line["truncated"] is False
    assert r.observer.views[-1]["raw_output"] == {
        "stdout": "hi\n", "stderr": "", "exit_code": 4, "truncated": False, "sandbox": "bwrap"
    }
    denied = rig(mode="read-only")
    await denied.call("bash", {"command": "ls"})
    assert denied.audit()[-1]["exit_code"] == 126


async def test_slash_and_cli_callers_are_recorded(rig: RigFactory) -> None:
    r = rig()
    await r.call("probe", {"path": "a"}, caller="slash")
    await r.call("probe", {"path": "b"}, caller="cli")
    assert [line["caller"] for line in r.audit()] == ["slash", "cli"]
