"""The local runner with the sandbox: a confinement built fresh for every command."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acpd.daemon.local import LocalCommandRunner
from acpd.sandbox.parent import PARENT_ENV
from acpd.sandbox.rules import PathRules
from acpd.tools.capabilities import CommandRequest, CommandResult
from tests.sandbox.conftest import escapes, kill_marked, marked, sleep_marker

pytestmark = pytest.mark.anyio

RULES = PathRules(deny_read=("**/.env",), deny_write=(".git/hooks/**",))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def run(ws: Path, command: str, *, limit: float = 30,
              rules: PathRules | None = RULES) -> CommandResult:
    async def ignore(*_: object) -> None:
        return None

    request = CommandRequest(command, str(ws), limit, 1 << 20, roots=(str(ws),),
                             sandbox=rules)
    return await LocalCommandRunner().run(request, ignore, ignore)


async def test_a_file_created_by_one_command_is_masked_for_the_next(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    first = await run(ws, "echo FRESH-CANARY > .env; cat .env")
    assert first.sandbox == "bwrap"
    assert "FRESH-CANARY" in first.output  # not there when the command started
    second = await run(ws, "cat .env")
    assert "FRESH-CANARY" not in second.output and second.exit_code != 0


async def test_a_repository_created_at_the_root_is_reported(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    result = await run(ws, "mkdir -p .git/hooks && printf x > .git/hooks/pre-commit")
    assert result.exit_code == 0
    assert any("created a git repository" in n for n in result.sandbox_notes)
    again = await run(ws, "true")
    assert not any("created a git repository" in n for n in again.sandbox_notes)


async def test_a_root_made_a_git_directory_is_reported(tmp_path: Path) -> None:
    """Plain writes of HEAD, objects/ and refs/ make the root itself a git directory, whose
    config the user's next `git status` there obeys (red-team 11 F3)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    result = await run(ws, "mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD"
                           " && printf '[core]\\n\\tfsmonitor = true\\n' > config")
    assert result.exit_code == 0, result.output
    assert any("itself a git directory" in n for n in result.sandbox_notes)
    assert not any("itself a git directory" in n
                   for n in (await run(ws, "true")).sandbox_notes)


async def test_timeout_and_cancel_end_every_process(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = sleep_marker()
    result = await run(ws, escapes(marker) + f"sleep {marker}", limit=1.5)
    assert result.timed_out
    await wait_gone(marker)
    marker = sleep_marker()
    with anyio.move_on_after(1.5):
        await run(ws, escapes(marker) + f"sleep {marker}")
    await wait_gone(marker)


async def wait_gone(marker: str) -> None:
    with anyio.move_on_after(5):
        while marked(marker):  # noqa: ASYNC110
            await anyio.sleep(0.05)
    assert marked(marker) == []


async def test_a_command_cancelled_while_its_sandbox_is_set_up_does_not_live_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """bubblewrap's init sets its parent-death signal only when the sandbox is set up, and
    ignores a TERM: a cancel in a command's first milliseconds killed bubblewrap alone, and
    the init lived on and ran the command. Cancelled at every moment of its start (each
    command under its own bubblewrap), nothing is left."""
    monkeypatch.setenv(PARENT_ENV, "off")
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = sleep_marker()
    try:
        for step in range(48):
            with anyio.move_on_after(step / 2000):
                await run(ws, f"sleep {marker}")
        await wait_gone(marker)
    finally:
        kill_marked(marker)


async def test_the_environment_switch_reports_why(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("ACPD_SANDBOX", "off")
    result = await run(ws, "echo hi")
    assert result.sandbox == "none: switched off by ACPD_SANDBOX=off"
    assert result.output == "hi\n"


async def test_a_git_directory_swapped_for_a_symlink_after_the_walk_is_not_bound(
    tmp_path: Path,
) -> None:
    """The pin of a git directory binds the directory the walk saw (by descriptor), never
    whatever the path names when bubblewrap starts (a concurrent command could swap it)."""
    from acpd.sandbox.build import build_confinement
    from acpd.sandbox.bwrap import open_pins
    from acpd.sandbox.launch import bash_argv
    from tests.sandbox.conftest import git_dir

    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    git_dir(ws / ".git")
    git_dir(outside)
    conf = build_confinement((str(ws),), RULES, cwd=str(ws))
    assert conf.pinned == (str(ws / ".git"),)
    (ws / ".git").rename(ws / "old-git")
    (ws / ".git").symlink_to(outside)
    pins = open_pins(conf)
    assert pins == {}
    argv = bash_argv(conf, "touch .git/planted; touch .git/objects/planted")
    process = await anyio.run_process(argv, cwd=str(ws), check=False)
    assert process.returncode != 0
    assert not (outside / "planted").exists() and not (outside / "objects" / "planted").exists()
