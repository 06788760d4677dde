"""The adversarial policy gate through the real daemon: the scripted model is also the judge
(the judge's request is the script's next turn), so each verdict below is what a model said."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gates.daemon import call, run_turns, shown

pytestmark = pytest.mark.anyio

GATE = """
[tools.adversarial_policy]
enabled = true
policies = ["Never create or change files named *.secret", "Do not contact the network"]
"""
WRITE = "echo made > made.txt"


async def test_an_allow_verdict_runs_the_call_and_is_audited(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("bash", command=WRITE), {"text": "ALLOW"}, {"text": "done"},
    ], GATE)
    assert done.stop == "end_turn"
    assert (workspace / "made.txt").read_text() == "made\n"
    (line,) = done.lines
    assert line["decision"] == "allow" and line["adversarial_policy_decision"] == "allow"
    assert line["gates"]["adversarial_policy"] == {"verdict": "allow", "judge": "allow"}
    assert line["phase"] == "executor" and line["caller"] == "model"
    assert line["caller_id"] == f"acp:{done.session_id}"


async def test_a_deny_verdict_refuses_the_call_and_tells_the_model(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("bash", command=WRITE), {"text": " DENY\n"}, {"text": "done"},
    ], GATE)
    assert not (workspace / "made.txt").exists()
    (final,) = done.finals()
    assert final["status"] == "failed" and "policy judge found" in shown(final)
    (line,) = done.lines
    assert line["decision"] == "deny" and line["decided_by"] == "policy_gate"
    assert line["adversarial_policy_decision"] == "deny"
    assert line["error_category"] == "PolicyBlocked" and line["exit_code"] == 126


@pytest.mark.parametrize("answer", [
    "ALLOW.", "allow", "ALLOW because it is fine", "I think: ALLOW", "", "ALLOW DENY",
    "`ALLOW`", "\uff21\uff2c\uff2c\uff2f\uff37", "ALLOW\u200b",
])
async def test_anything_but_a_bare_verdict_denies(
    answer: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("bash", command=WRITE), {"text": answer}, {"text": "done"},
    ], GATE)
    assert not (workspace / "made.txt").exists()
    (final,) = done.finals()
    assert final["status"] == "failed" and "no valid verdict" in shown(final)
    (line,) = done.lines
    gate = line["gates"]["adversarial_policy"]
    assert gate["judge"] == "error" and gate["verdict"] == "deny"
    assert gate["fail_open"] is False and line["decided_by"] == "policy_gate"


async def test_a_provider_error_denies_and_fail_open_allows(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    turns = [call("bash", command=WRITE), {"error": "upstream 503", "status": 503},
             {"text": "done"}]
    done = await run_turns(tmp_path, data_dir, workspace, turns, GATE)
    assert not (workspace / "made.txt").exists()
    assert "upstream 503" in shown(done.finals()[0])
    assert done.lines[0]["gates"]["adversarial_policy"]["judge"] == "error"

    opened = GATE + "fail_open = true\n"
    again = await run_turns(tmp_path, data_dir, workspace, turns, opened, model="t.json")
    assert (workspace / "made.txt").read_text() == "made\n"
    line = again.lines[-1]
    assert line["decision"] == "allow"
    assert line["gates"]["adversarial_policy"] == {
        "verdict": "allow", "judge": "error", "fail_open": True,
        "error": "the judge's model call failed: upstream 503",
    }


async def test_a_judge_that_answers_with_a_tool_call_denies(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("bash", command=WRITE), call("bash", command="echo ALLOW"), {"text": "done"},
    ], GATE)
    assert not (workspace / "made.txt").exists()
    assert "tool call" in done.lines[0]["gates"]["adversarial_policy"]["error"]


async def test_policy_denials_and_exempt_tools_never_reach_the_judge(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    # The shell policy denies curl: no judge turn is spent. read is judged (ALLOW), and an
    # exempt tool is not: the script has exactly the turns those rules need.
    config = GATE + 'exempt_tools = ["update_plan"]\n'
    plan = {"entries": [{"content": "x", "priority": "low", "status": "pending"}]}
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("bash", command="curl -s https://example.com -o got.txt"),
        call("update_plan", **plan),
        call("read", path="hello.txt"), {"text": "ALLOW"},
        {"text": "done"},
    ], config)
    assert done.stop == "end_turn" and done.said().endswith("done")
    curl, plan_line, read = done.lines
    assert curl["decided_by"] == "policy" and curl["gates"] is None
    assert plan_line["gates"]["adversarial_policy"]["judge"] == "exempt"
    assert read["adversarial_policy_decision"] == "allow" and read["decision"] == "allow"


async def test_user_requested_calls_are_planner_phase_and_not_judged(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [], GATE,
                           prompt=f"/bash {WRITE}")
    assert (workspace / "made.txt").read_text() == "made\n"
    (line,) = done.lines
    assert line["phase"] == "planner" and line["caller"] == "slash"
    assert line["gates"] is None and line["caller_id"] == f"acp:{done.session_id}"


async def test_a_cancel_while_the_judge_thinks_closes_the_card_and_runs_nothing(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    import asyncio

    from tests.e2e.client import RecordingClient
    from tests.e2e.harness import acpd, text, write_script
    from tests.gates.daemon import audit

    plan = {"entries": [{"content": "x", "priority": "low", "status": "pending"}]}
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "update_plan", "arguments": plan},
                        {"name": "bash", "arguments": {"command": WRITE}}]},
        {"delay": 60, "text": "ALLOW"}, {"text": "after"},
    ])
    toml = tmp_path / "acpd.toml"
    toml.write_text('[agent]\ndefault_mode = "auto"\n' + GATE
                    + 'exempt_tools = ["update_plan"]\n')
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(toml))) as run:
        session_id = await run.open_session()
        prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id, prompt=text("go")))
        await client.wait_for(lambda: any(u.get("status") == "completed"
                                          for u in client.updates))
        await run.conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(prompt, 20)).stop_reason == "cancelled"
        finals = [client.final(c["toolCallId"]) for c in client.tool_calls()]
        assert [f["status"] for f in finals][:1] == ["completed"]
        assert all(f["status"] == "failed" for f in finals[1:])  # no card left pending
    assert not (workspace / "made.txt").exists()
    assert all(line["decision"] != "allow" for line in audit(data_dir)[1:])
