"""`acpd demo`'s second act, end to end: a real `acpd demo` subprocess driving a real
`acpd serve`. Mid-session a plugin overlay tightens the shell policy; the daemon announces it
and tells the session; the command that ran in the tour is refused in the same session."""

from __future__ import annotations

import pytest

from tests.test_cli import run_acpd

COMMAND = "wc -l README.md src/*.py data/*.csv"


@pytest.mark.parametrize("flags", [(), ("--no-terminal",)], ids=["terminal", "local"])
def test_demo_refuses_the_next_command_under_the_new_overlay(flags: tuple[str, ...]) -> None:
    done = run_acpd("demo", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    tour, _, act = out.partition("mid-session: a plugin tightens the shell policy")
    assert act, out
    # The tour ran the command...
    assert "30 total" in tour and "8 tool calls (8 completed, 0 failed)" in tour
    # ...then the overlay was added without a restart, and the daemon said so, in words.
    assert "added the plugin overlay" in act and "demo-lockdown/plugin.toml" in act
    assert "editor told _acpd/policy_reloaded: policy" in act
    told = act.count("new rule: plugin.demo-lockdown.no-wc = deny wc")
    assert told == 2  # the notification's summary, and the agent message at the prompt
    # The same command, in the same session, is refused by the new rule and does not run.
    assert f"pending     execute  {COMMAND}" in act
    assert "Blocked: the shell policy denies it: the demo-lockdown plugin forbids wc" in act
    assert "30 total" not in act
    assert "1 tool calls (0 completed, 1 failed)" in act
    assert "now the demo-lockdown overlay refuses it" in act


def test_demo_with_its_own_script_skips_the_second_act() -> None:
    from acpd.daemon.demo import bundled_script

    done = run_acpd("demo", "--script", str(bundled_script()))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mid-session" not in done.stdout
    assert "8 tool calls (8 completed, 0 failed)" in done.stdout
