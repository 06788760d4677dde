"""The ACP v2 draft through the forwarder: the whole v2 end-to-end session of
tests/e2e/test_v2_session.py (initialize, a turn that reads, writes and runs bash with a
permission, resume with and without replay; every message checked against schema/v2), with
`[serve] remote = "auto"` making its `acpd serve` a forwarder to the shared daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import test_v2_session as v2
from tests.remote.harness import Place

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_v2_session_through_the_shared_daemon(
    shared: Place, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The e2e harness points ACPD_CONFIG at tmp/no-config.toml: that file turns remote on.
    (tmp_path / "no-config.toml").write_text('[serve]\nremote = "auto"\n')
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared.runtime))
    await v2.test_a_v2_session_reads_writes_and_runs_itself_and_resumes(
        tmp_path, shared.data_dir, shared.workspace
    )
    assert len(shared.daemon_pids()) == 1, "it ran in the shared daemon"
