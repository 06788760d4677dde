"""The utility gate through the real daemon: off by default, skips an unchanged repeat,
fails closed when the score cannot be computed, never gates user-requested calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gates.daemon import call, run_turns, shown

pytestmark = pytest.mark.anyio

ON = "[tools.utility]\nenabled = true\n"
# Finite weights whose sum overflows: gain*w + exploration*w is past the largest float.
OVERFLOW = ON + "[tools.utility.weights]\ngain = 1.7e308\nexploration = 1.7e308\n"


async def test_off_by_default_a_repeat_runs(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("read", path="hello.txt"), call("read", path="hello.txt"), {"text": "done"},
    ])
    assert [line["decision"] for line in done.lines] == ["allow", "allow"]
    assert all(line["gates"] is None for line in done.lines)


async def test_an_unchanged_repeat_is_skipped_and_a_change_makes_it_useful_again(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("read", path="hello.txt"),
        call("read", path="hello.txt"),
        call("bash", command="echo more >> hello.txt"),
        call("read", path="hello.txt"),
        {"text": "done"},
    ], ON)
    first, repeat, change, again = done.lines
    assert first["decision"] == "allow" and first["gates"]["utility"]["skipped"] is False
    assert repeat["decision"] == "deny" and repeat["decided_by"] == "utility"
    assert repeat["gates"]["utility"]["redundancy"] == 1.0
    final = done.finals()[1]
    assert final["status"] == "failed" and "below the threshold" in shown(final)
    assert "identical call already ran" in shown(final)
    assert change["decision"] == "allow" and again["decision"] == "allow"


async def test_a_repeat_the_users_prompt_spells_out_is_not_gated(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("read", path="hello.txt"), call("read", path="hello.txt"), {"text": "done"},
    ], OVERFLOW, prompt="read hello.txt twice, please")
    assert [line["decision"] for line in done.lines] == ["allow", "allow"]
    assert all(line["gates"]["utility"] == {"user_requested": True} for line in done.lines)


async def test_a_scoring_error_counts_as_low_utility(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("read", path="hello.txt"), call("bash", command="echo x > x.txt"),
        {"text": "done"},
    ], OVERFLOW)
    read, bash = done.lines
    for line in (read, bash):  # fail-closed for every tool, state-changing ones included
        assert line["decision"] == "deny" and line["decided_by"] == "utility"
        assert "not a finite number" in line["gates"]["utility"]["error"]
    assert not (workspace / "x.txt").exists()
    assert all("could not be scored" in shown(f) for f in done.finals())


async def test_skill_tools_and_user_requested_calls_are_exempt(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = OVERFLOW.replace("enabled = true\n", 'enabled = true\nexempt_tools = ["read"]\n')
    done = await run_turns(tmp_path, data_dir, workspace, [
        call("read", path="hello.txt"), {"text": "done"},
    ], config)
    assert done.lines[0]["decision"] == "allow" and done.lines[0]["gates"] is None
    slash = await run_turns(tmp_path, data_dir, workspace, [], OVERFLOW, model="t.json",
                            prompt="/bash echo y > y.txt")
    assert (workspace / "y.txt").read_text() == "y\n"
    assert slash.lines[-1]["phase"] == "planner" and slash.lines[-1]["gates"] is None


async def test_status_names_the_gates_that_are_on(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = ON + "[tools.adversarial_policy]\nenabled = true\npolicies = [\"a\", \"b\"]\n"
    done = await run_turns(tmp_path, data_dir, workspace, [], config, prompt="/status")
    said = done.said()
    assert "policy gate: judge scripted:" in said and "2 policies, fail_open=False" in said
    assert "utility gate: threshold 0" in said and "authorization" not in said
    plain = await run_turns(tmp_path, data_dir, workspace, [], model="t.json",
                            prompt="/status")
    assert "policy gate" not in plain.said() and "utility gate" not in plain.said()
