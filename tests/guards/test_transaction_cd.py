"""Item 9: the transactional shell follows `cd`/`pushd` and says so when it cannot know what a
command writes. Through the real daemon (local bash, the config's `transactional = true`):
the file a command really changed is restored and named, a file it never touched is neither
restored nor named, and a target it cannot compute (a variable directory, `env -C`, `git -C`)
is reported as "no snapshot was possible", never as a rollback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, caps, write_script
from tests.guards.conftest import bash_turns
from tests.output.conftest import messages

pytestmark = pytest.mark.anyio

CONFIG = """
[tools.shell]
transactional = true
"""


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "sub" / "deeper").mkdir(parents=True)
    for path in ("f.txt", "sub/f.txt", "sub/deeper/f.txt"):
        (workspace / path).write_text(f"original {path}\n")
    return workspace


async def run_commands(tmp_path: Path, data_dir: Path, ws: Path, *commands: str) -> list[str]:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    script = write_script(tmp_path / "s.json", bash_turns(*commands))
    async with acpd(tmp_path, data_dir=data_dir, workspace=ws, script=script,
                    client=RecordingClient(), args=("--config", str(config))) as run:
        session = await run.open_session(caps(terminal=False))
        assert await run.prompt(session, "go") == "end_turn"
    return [m["text"] for m in messages(data_dir, session) if m["role"] == "tool"]


@pytest.mark.parametrize("command", [
    "cd sub && echo CHANGED > f.txt; exit 1",
    "cd sub; cd deeper; cd .. && echo CHANGED > f.txt; exit 2",
    "pushd sub >/dev/null && echo CHANGED > f.txt; popd >/dev/null; exit 1",
    "cd ./sub/ && sed -i s/original/CHANGED/ f.txt && exit 1",
    "bash -c 'cd sub && echo CHANGED > f.txt; exit 1'",
    "builtin cd sub && echo CHANGED > f.txt; exit 1",
])
async def test_the_changed_file_is_restored_and_only_it_is_named(
    command: str, tmp_path: Path, data_dir: Path, ws: Path
) -> None:
    (text,) = await run_commands(tmp_path, data_dir, ws, command)
    assert (ws / "sub" / "f.txt").read_text() == "original sub/f.txt\n", text
    assert (ws / "f.txt").read_text() == "original f.txt\n"
    note = next(line for line in text.splitlines() if line.startswith("[rolled back"))
    assert str(ws / "sub" / "f.txt") in note
    assert f"{ws / 'f.txt'}," not in note + "," and str(ws / "sub" / "deeper") not in note


@pytest.mark.parametrize("command", [
    'D=sub; cd "$D" && echo CHANGED > f.txt; exit 1',
    "env -C sub sh -c 'echo CHANGED > f.txt'; exit 1",
    "cd sub; cd - >/dev/null; cd sub && echo CHANGED > f.txt; exit 1",
    "eval 'cd sub'; echo CHANGED > f.txt; exit 1",
])
async def test_unknown_targets_say_no_snapshot_was_possible(
    command: str, tmp_path: Path, data_dir: Path, ws: Path
) -> None:
    (text,) = await run_commands(tmp_path, data_dir, ws, command)
    assert (ws / "sub" / "f.txt").read_text() == "CHANGED\n", "nothing could be restored"
    assert "no snapshot was possible" in text and "rolled back" not in text.replace(
        "nothing can be rolled back", "")


async def test_an_untouched_snapshot_is_not_claimed(
    tmp_path: Path, data_dir: Path, ws: Path
) -> None:
    (text,) = await run_commands(tmp_path, data_dir, ws, "cd sub && cat f.txt > /dev/null "
                                 "&& rm -f never-there.txt; exit 1")
    assert "nothing to restore" in text and str(ws / "f.txt") not in text
