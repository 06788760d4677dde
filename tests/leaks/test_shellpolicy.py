"""The shell policy's per-plugin-set entries forget a session that is over: each entry's
`sessions` only grew, and a broken reload then wrote a notice for every session ever seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpd.policy.reload import ReloadReport
from acpd.tools.shellpolicy import ShellPolicies, ShellPolicySettings

pytestmark = pytest.mark.anyio


async def test_sessions_that_are_over_leave_nothing(tmp_path: Path) -> None:
    policies = ShellPolicies(ShellPolicySettings())
    try:
        for i in range(20):
            await policies.handle_for(str(tmp_path), f"sess_{i}")
        (entry,) = policies._entries.values()
        assert len(entry.sessions) == 20
        report = ReloadReport("h", (), ("broken",), changed=False, kept_last_good=True)
        await policies._reported(entry, report)
        assert len(entry.notices) == 20
        for i in range(20):
            policies.forget(f"sess_{i}")
        assert entry.sessions == set() and entry.notices == {}
        await policies._reported(entry, report)  # nobody left to owe it to
        assert entry.notices == {}
    finally:
        policies.close()
