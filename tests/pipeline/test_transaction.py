"""The transactional shell: write targets from the parser, snapshot, rollback by rename."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpd.daemon.local import LocalCommandRunner
from acpd.policy.writes import write_targets
from acpd.tools.capabilities import CommandRequest, CommandResult
from acpd.tools.errors import ToolError
from acpd.tools.transaction import TransactionalRunner, TransactionSettings

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("command", "targets", "writes"), [
    ("echo hi > a.txt", ["/ws/a.txt"], True),
    ("rm -rf build x.txt", ["/ws/build", "/ws/x.txt"], True),
    ("bash -c 'tee -a log.txt'", ["/ws/log.txt"], True),
    ("env X=1 sed -i s/a/b/ src/f.py", ["/ws/src/f.py"], True),
    ("cat a 2>&1 | grep x", [], False),
    ("echo hi >> /dev/null", [], True),
])
def test_write_targets(command: str, targets: list[str], writes: bool) -> None:
    plan = write_targets(command, "/ws")
    assert plan.targets == targets and plan.writes is writes and not plan.dynamic


def test_a_target_it_cannot_compute_is_dynamic() -> None:
    assert write_targets('echo x > "$OUT"', "/ws").dynamic
    assert write_targets("rm *.log", "/ws").dynamic


async def run(ws: Path, command: str, **settings: Any) -> CommandResult:
    async def nothing(*_: Any) -> None:
        return None

    runner = TransactionalRunner(LocalCommandRunner(), TransactionSettings(**settings))
    request = CommandRequest(command, str(ws), 10.0, 1 << 16, roots=(str(ws),))
    return await runner.run(request, nothing, nothing)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    (path / "dir").mkdir(parents=True)
    (path / "f.txt").write_text("old\n")
    (path / "dir" / "inner.txt").write_text("inner\n")
    return path


async def test_rollback_on_a_configured_exit_code(ws: Path) -> None:
    result = await run(ws, "echo new > f.txt; echo made > created.txt; rm -rf dir; exit 1")
    assert result.exit_code == 1
    assert (ws / "f.txt").read_text() == "old\n"
    assert not (ws / "created.txt").exists()
    assert (ws / "dir" / "inner.txt").read_text() == "inner\n"
    assert result.rollback == [str(ws / "dir"), str(ws / "created.txt"), str(ws / "f.txt")]
    assert any("rolled back after exit code 1" in n for n in result.notes)
    assert not list(ws.glob(".*acpd-rollback")), "no staging file left"  # noqa: ASYNC240


async def test_other_exit_codes_keep_the_changes(ws: Path) -> None:
    for code in (0, 3):
        result = await run(ws, f"echo new{code} > f.txt; exit {code}")
        assert result.rollback is None and (ws / "f.txt").read_text() == f"new{code}\n"


async def test_snapshot_required_fails_closed(ws: Path) -> None:
    with pytest.raises(ToolError, match="SnapshotFailed"):
        await run(ws, "echo new > f.txt; exit 1", snapshot_required=True, max_snapshot_bytes=2)
    assert (ws / "f.txt").read_text() == "old\n", "it never ran"
    with pytest.raises(ToolError, match="cannot be computed"):
        await run(ws, 'echo x > "$HOME_FILE"', snapshot_required=True)


async def test_without_snapshot_required_it_runs_and_says_so(ws: Path) -> None:
    result = await run(ws, "echo new > f.txt; exit 1", max_snapshot_bytes=2)
    assert (ws / "f.txt").read_text() == "new\n" and result.rollback is None
    assert any("no snapshot" in n for n in result.notes)
