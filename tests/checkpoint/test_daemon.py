"""Through the real daemon and the real CLI: the bash card carries the diffs beside the
terminal, `/undo` is advertised and works in a session (model or direct mode), and the
checkpoints outlive the daemon (`acpd undo` after it exited)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.checkpoint.conftest import ALLOW_RM, tree
from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, caps, daemon_env, write_script
from tests.e2e.schema import REPO

pytestmark = pytest.mark.anyio


def config_file(tmp_path: Path) -> Path:
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_RM)
    config = tmp_path / "acpd.toml"
    config.write_text(f'[agent]\ndefault_mode = "auto"\n[tools.shell]\npolicy_file = "{policy}"\n')
    return config


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpd", "undo", *args], capture_output=True, text=True,
        env={**os.environ, **daemon_env(tmp_path)}, cwd=REPO, timeout=60, check=False,
    )


def git(workspace: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(workspace), "-c", "user.email=t@t", "-c", "user.name=t",
                    *args], check=True, capture_output=True)


def content_of(update: dict[str, Any]) -> tuple[list[str], dict[str, dict[str, Any]], str]:
    kinds = [c["type"] for c in update["content"]]
    diffs = {c["path"]: c for c in update["content"] if c["type"] == "diff"}
    texts = "\n".join(c["content"]["text"] for c in update["content"] if c["type"] == "content")
    return kinds, diffs, texts


def model_saw(data_dir: Path) -> str:
    db = sqlite3.connect(data_dir / "sessions.sqlite3")
    try:
        return "\n".join(bytes(row[0]).decode() for row in db.execute(
            "SELECT payload FROM messages ORDER BY seq"))
    finally:
        db.close()


@pytest.mark.slow
async def test_bash_card_diffs_then_undo_in_the_editor_and_on_the_cli_after_exit(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    git(workspace, "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "first")
    os.chmod(workspace / "src" / "main.py", 0o751)
    original = tree(workspace)
    command = "echo new > made.txt; echo more >> hello.txt; rm -rf .git src"
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "ok"},
    ])
    client = RecordingClient(terminal_enabled=True)
    # Unconfined: the kernel sandbox would keep .git/config and hooks (read-only mounts), and
    # this test is about undoing a whole deletion, as where no sandbox is available.
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, args=("--config", str(config_file(tmp_path))),
                    env={"ACPD_SANDBOX": "off"}) as run:
        session_id = await run.open_session()
        await client.wait_for(lambda: any(
            u["sessionUpdate"] == "available_commands_update" for u in client.updates))
        commands = next(u for u in client.updates
                    if u["sessionUpdate"] == "available_commands_update")
        assert "undo" in [c["name"] for c in commands["availableCommands"]]
        assert await run.prompt(session_id, "go") == "end_turn"
        (call,) = client.tool_calls()
        call_id = call["toolCallId"]
        kinds, diffs, texts = content_of(client.final(call_id))
        assert kinds[0] == "terminal" and "diff" in kinds
        made, hello = str(workspace / "made.txt"), str(workspace / "hello.txt")
        assert diffs[made].get("oldText") is None and diffs[made]["newText"] == "new\n"
        assert diffs[hello]["newText"].endswith("more\n")
        deleted = [d for d in diffs.values() if d["path"].startswith(str(workspace / ".git"))]
        assert deleted and all(d["newText"] == "" for d in deleted)
        assert "1 created, 1 changed" in texts and f"/undo {call_id}" in texts

        assert await run.prompt(session_id, "/undo") == "end_turn"
        assert f"Undid {call_id}" in client.texts()
        assert tree(workspace) == original
        assert await run.prompt(session_id, "/undo list") == "end_turn"
        assert f"{call_id}" in client.texts() and "undone by undo_" in client.texts()
    assert "[files: 1 created (made.txt), 1 changed (hello.txt)" in model_saw(data_dir)

    # The daemon is gone; the checkpoints are not.
    listed = cli(tmp_path, "--data-dir", str(data_dir))
    assert listed.returncode == 0 and call_id in listed.stdout, listed.stderr
    undo_id = listed.stdout.split("undone by ")[1].split()[0]
    redo = cli(tmp_path, "--data-dir", str(data_dir), undo_id)
    assert redo.returncode == 0, redo.stderr
    assert not (workspace / ".git").exists() and (workspace / "made.txt").exists()
    again = cli(tmp_path, "--data-dir", str(data_dir), "--cwd", str(workspace), "last")
    assert again.returncode == 0 and f"Undid {call_id}" in again.stdout, again.stderr
    assert tree(workspace) == original
    refused = cli(tmp_path, "--data-dir", str(data_dir), call_id)
    assert refused.returncode == 1 and "already undone" in refused.stderr
    assert "Traceback" not in refused.stderr
    unknown = cli(tmp_path, "--data-dir", str(data_dir), "no-such-call")
    assert unknown.returncode == 1 and "no recorded call" in unknown.stderr
    audit = [json.loads(line) for line in (data_dir / "audit.jsonl").read_text().splitlines()]
    undos = [a for a in audit if a["name"] == "undo"]
    assert [(a["caller"], a["decision"]) for a in undos] == [
        ("slash", "allow"), ("cli", "allow"), ("cli", "allow"), ("cli", "refused")]


async def test_direct_mode_undo(tmp_path: Path, data_dir: Path, workspace: Path) -> None:
    client = RecordingClient(terminal_enabled=False)
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--config", str(config_file(tmp_path)))) as run:
        session_id = await run.open_session(caps(terminal=False))
        await run.prompt(session_id, "/bash echo direct > hello.txt")
        assert (workspace / "hello.txt").read_text() == "direct\n"
        await run.prompt(session_id, "/undo")
        assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
        undo_cards = [c for c in client.tool_calls() if c["title"].startswith("Undo ")]
        assert len(undo_cards) == 1
        _kinds, diffs, _ = content_of(client.final(undo_cards[0]["toolCallId"]))
        assert diffs[str(workspace / "hello.txt")]["newText"] == "hello from the workspace\n"


async def test_the_card_never_diffs_a_file_the_read_policy_hides(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """A command that rewrites a deny_read file (`echo x > tls.pem`) must not show the key it
    replaced, nor the new one, in its card or in the card of its undo: the file is named,
    its content withheld, as the read tool would refuse it."""
    (workspace / "tls.pem").write_text("OLD-KEY-MATERIAL\n")
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "a.txt").write_text("SECRET-A\n")
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_RM.replace("[paths]\n", '[paths]\ndeny_read = ["**/*.pem", '
                                       '"**/secrets/**"]\n'))
    config = tmp_path / "acpd.toml"
    config.write_text(f'[agent]\ndefault_mode = "auto"\n[tools.shell]\npolicy_file = "{policy}"\n')
    command = ("echo NEW-KEY-MATERIAL > tls.pem; echo SECRET-B > secrets/b.txt; "
               "rm secrets/a.txt; echo visible > plain.txt")
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "ok"},
    ])
    client = RecordingClient(terminal_enabled=False)
    # Unconfined: in the kernel sandbox the hidden files are masked and the writes would
    # not reach them; where no sandbox runs, they do, and the card is the leak.
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, args=("--config", str(config)),
                    env={"ACPD_SANDBOX": "off"}) as run:
        session_id = await run.open_session(caps(terminal=False))
        assert await run.prompt(session_id, "go") == "end_turn"
        assert (workspace / "tls.pem").read_text() == "NEW-KEY-MATERIAL\n"
        (call,) = client.tool_calls()
        _kinds, diffs, texts = content_of(client.final(call["toolCallId"]))
        assert list(diffs) == [str(workspace / "plain.txt")]
        for name in ("tls.pem (changed; content withheld", "secrets/b.txt (created; content "
                     "withheld", "secrets/a.txt (deleted; content withheld"):
            assert name in texts, texts
        assert await run.prompt(session_id, "/undo") == "end_turn"
        assert (workspace / "tls.pem").read_text() == "OLD-KEY-MATERIAL\n"
    # What the files held never shows; what the command wrote shows only as its command.
    shown = json.dumps(client.updates)
    assert "OLD-KEY-MATERIAL" not in shown and "SECRET-A" not in shown
    diffs_shown = json.dumps([c for u in client.updates for c in u.get("content") or []
                              if isinstance(c, dict) and c.get("type") == "diff"])
    assert "visible" in diffs_shown
    assert "NEW-KEY-MATERIAL" not in diffs_shown and "SECRET-B" not in diffs_shown
