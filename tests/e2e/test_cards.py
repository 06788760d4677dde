"""Diff before approval, on the wire through the official Python SDK client.

A file-changing call that needs permission carries what it will do in the permission request
and in its pending `tool_call`: write and edit a diff (read the way the tool reads: the
editor's unsaved buffer when the editor serves files), delete/move/copy what goes, bash the
command and its directory. Approving writes exactly the previewed text; rejecting writes
nothing; a file changed between the preview and the answer is not written. Every message is
validated against the v1 schema by the harness.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import Answerer, RecordingClient, always
from tests.e2e.harness import acpd, caps, write_script
from tests.e2e.schema import read_log

pytestmark = pytest.mark.anyio


def calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": name, "arguments": args}]} for name, args in calls
    ]
    return [*turns, {"text": "done"}]


async def run_calls(
    tmp_path: Path, data_dir: Path, workspace: Path, client: RecordingClient,
    *steps: tuple[str, dict[str, Any]], fs: bool = True,
) -> None:
    script = write_script(tmp_path / "s.json", calls(*steps))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session_id = await run.open_session(caps(fs=fs))
        assert await run.prompt(session_id, "go") == "end_turn"


def asked(client: RecordingClient) -> dict[str, Any]:
    (request,) = client.calls("session/request_permission")
    call: dict[str, Any] = request["toolCall"]
    return call


def pending(client: RecordingClient) -> dict[str, Any]:
    (card,) = client.tool_calls()
    assert card["status"] == "pending"
    return card


def recording(option: str, seen: list[Any], look: Any) -> Answerer:
    """Answer `option`, after noting what `look()` finds while the user decides."""
    def answer(_call: dict[str, Any], _options: list[dict[str, Any]]) -> str:
        seen.append(look())
        return option
    return answer


@pytest.mark.parametrize("fs", [True, False], ids=["editor", "local"])
async def test_write_of_a_new_file_shows_the_diff_and_creates_nothing_until_approved(
    tmp_path: Path, data_dir: Path, workspace: Path, fs: bool
) -> None:
    target = workspace / "new" / "deep" / "notes.md"
    seen: list[Any] = []
    client = RecordingClient(answer=recording("allow_once", seen, (workspace / "new").exists))
    await run_calls(tmp_path, data_dir, workspace, client,
                    ("write", {"path": "new/deep/notes.md", "content": "# Notes\nfirst\n"}), fs=fs)
    diff = {"type": "diff", "path": str(target), "newText": "# Notes\nfirst\n"}
    request = asked(client)
    assert request["content"] == [diff]  # the diff alone: Toad's diff screen needs that
    # On the wire a new file says `"oldText": null` (Toad opens its diff view only then).
    [wire] = [line.message for line in read_log(tmp_path / "run.wire.log")
              if line.direction == "A" and isinstance(line.message, dict)
              and line.message.get("method") == "session/request_permission"]
    assert wire["params"]["toolCall"]["content"][0] == {**diff, "oldText": None}
    assert request["locations"][0]["path"] == str(target)
    card = pending(client)
    assert card["content"] == request["content"]
    assert card["locations"] == request["locations"]
    assert seen == [False]  # the preview created no directory
    assert target.read_text() == "# Notes\nfirst\n"
    assert client.final(card["toolCallId"])["status"] == "completed"


async def test_write_over_an_unsaved_buffer_shows_the_buffer_as_old_text(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    path = str(workspace / "hello.txt")
    client = RecordingClient(buffers={path: "unsaved edit in the editor\n"})
    await run_calls(tmp_path, data_dir, workspace, client,
                    ("write", {"path": "hello.txt", "content": "replaced\n"}))
    request = asked(client)
    assert request["content"] == [{"type": "diff", "path": path,  # the diff alone (Toad)
                                   "oldText": "unsaved edit in the editor\n",
                                   "newText": "replaced\n"}]
    assert pending(client)["content"] == request["content"]
    assert client.written == {path: "replaced\n"}


@pytest.mark.parametrize("fs", [True, False], ids=["editor", "local"])
async def test_edit_approved_writes_exactly_the_previewed_text(
    tmp_path: Path, data_dir: Path, workspace: Path, fs: bool
) -> None:
    source = workspace / "src" / "main.py"
    source.write_text("a = 1\nb = 2\nc = 3\n")
    client = RecordingClient()
    if fs:
        # The editor holds an unsaved change: the edit applies to it, and the diff shows it.
        client.buffers[str(source)] = "a = 1\nb = 2\nc = 30\n"
    await run_calls(tmp_path, data_dir, workspace, client,
                    ("edit", {"path": "src/main.py", "old_string": "b = 2",
                              "new_string": "b = 20"}), fs=fs)
    (diff,) = [c for c in asked(client)["content"] if c["type"] == "diff"]
    old = "a = 1\nb = 2\nc = 30\n" if fs else "a = 1\nb = 2\nc = 3\n"
    assert diff == {"type": "diff", "path": str(source), "oldText": old,
                    "newText": old.replace("b = 2", "b = 20")}
    assert pending(client)["content"][0] == diff
    assert source.read_text() == diff["newText"]


@pytest.mark.parametrize("tool", ["write", "edit"])
async def test_rejected_change_leaves_the_file_untouched(
    tmp_path: Path, data_dir: Path, workspace: Path, tool: str
) -> None:
    args: dict[str, Any] = (
        {"path": "hello.txt", "content": "gone\n"} if tool == "write"
        else {"path": "hello.txt", "old_string": "hello", "new_string": "bye"})
    before = (workspace / "hello.txt").stat()
    client = RecordingClient(answer=always("reject_once"))
    await run_calls(tmp_path, data_dir, workspace, client, (tool, args))
    assert asked(client)["content"][0]["type"] == "diff"
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
    assert (workspace / "hello.txt").stat().st_mtime_ns == before.st_mtime_ns
    assert client.calls("fs/write_text_file") == []
    assert client.final(pending(client)["toolCallId"])["status"] == "failed"


@pytest.mark.parametrize("fs", [True, False], ids=["editor", "local"])
@pytest.mark.parametrize("tool", ["write", "edit", "write-new"])
async def test_a_file_changed_after_the_preview_is_not_written(
    tmp_path: Path, data_dir: Path, workspace: Path, tool: str, fs: bool
) -> None:
    """The user approved a diff; the file changed before the answer came: the stale approval
    is not applied, the file keeps the newer text, and the model is told why."""
    path = workspace / ("fresh.txt" if tool == "write-new" else "hello.txt")
    args: dict[str, Any] = (
        {"path": path.name, "old_string": "hello", "new_string": "bye"} if tool == "edit"
        else {"path": path.name, "content": "from the model\n"})

    def change_then_allow(_call: dict[str, Any], _options: list[dict[str, Any]]) -> str:
        path.write_text("hello, changed meanwhile\n")
        return "allow_once"

    client = RecordingClient(answer=change_then_allow)
    name = "edit" if tool == "edit" else "write"
    await run_calls(tmp_path, data_dir, workspace, client, (name, args), fs=fs)
    assert asked(client)["content"][0]["type"] == "diff"
    final = client.final(pending(client)["toolCallId"])
    assert final["status"] == "failed"
    shown = final["content"][-1]["content"]["text"]
    assert "changed after the preview" in shown and "nothing was written" in shown
    assert path.read_text() == "hello, changed meanwhile\n"
    assert client.calls("fs/write_text_file") == []


async def test_delete_and_move_say_what_goes(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    tree = workspace / "build"
    (tree / "sub").mkdir(parents=True)
    for name in ("a.o", "b.o", "sub/c.o"):
        (tree / name).write_text("x" * 10)
    os.symlink("a.o", tree / "link")
    client = RecordingClient(answer=always("reject_once"))
    await run_calls(tmp_path, data_dir, workspace, client,
                    ("delete_path", {"path": "build"}),
                    ("move_path", {"source": "hello.txt", "destination": "docs/hello.txt"}))
    delete, move = (r["toolCall"] for r in client.calls("session/request_permission"))
    text = delete["content"][0]["content"]["text"]
    assert text.startswith(f"Deletes the directory {tree} and everything in it")
    assert "3 files, 1 directories, 1 symlinks (30 bytes in files)" in text
    assert "sub/c.o" in text and "link" in text
    assert delete["locations"] == [{"path": str(tree)}]
    moved = move["content"][0]["content"]["text"]
    assert f"Moves the file {workspace / 'hello.txt'} (25 bytes)" in moved
    assert f"to {workspace / 'docs' / 'hello.txt'}" in moved
    assert move["locations"] == [{"path": str(workspace / "hello.txt")},
                                 {"path": str(workspace / "docs" / "hello.txt")}]
    cards = client.tool_calls()
    assert [c["content"] for c in cards] == [delete["content"], move["content"]]
    assert (tree / "sub" / "c.o").exists() and (workspace / "hello.txt").exists()
    assert not (workspace / "docs").exists()


async def test_bash_card_names_the_command_and_its_directory(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    command = "python3 -c 'print(1)' > out.txt"
    client = RecordingClient(answer=always("reject_once"))
    await run_calls(tmp_path, data_dir, workspace, client,
                    ("bash", {"command": command, "timeout": 7}))
    request, card = asked(client), pending(client)
    assert request["title"] == card["title"] == f"{command} (in {workspace})"
    raw = {"command": command, "cwd": str(workspace), "timeout": 7}
    assert request["rawInput"] == card["rawInput"] == raw
    assert not (workspace / "out.txt").exists()


async def test_secrets_in_a_diff_are_redacted_and_a_deny_read_file_is_never_shown(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    (workspace / "settings.py").write_text(f"AWS_KEY = '{key}'\nDEBUG = True\n")
    # deny_read, not deny_write; the marker is no credential: only the read policy hides it
    (workspace / "tls.pem").write_text(f"TOKEN={key}\nplain marker 4471\n")
    client = RecordingClient()  # approved: the final cards (and any checkpoint diff) too
    await run_calls(tmp_path, data_dir, workspace, client,
                    ("edit", {"path": "settings.py", "old_string": "DEBUG = True",
                              "new_string": "DEBUG = False"}),
                    ("write", {"path": "tls.pem", "content": "TOKEN=other\n"}))
    settings, env = (r["toolCall"] for r in client.calls("session/request_permission"))
    diff = settings["content"][0]
    assert key not in diff["oldText"] and key not in diff["newText"]
    assert diff["oldText"].replace("True", "False") == diff["newText"]
    assert "DEBUG = False" in diff["newText"]
    shown = str(client.events)
    assert key not in shown and "marker 4471" not in shown
    withheld, note, reason = env["content"]
    assert withheld == {"type": "diff", "path": str(workspace / "tls.pem"),
                        "oldText": withheld["oldText"], "newText": "TOKEN=other\n"}
    assert withheld["oldText"].startswith("[the current content is not shown: ")
    assert "not shown" in note["content"]["text"]
    assert "changes a file deny_read names" in reason["content"]["text"]  # why it asks
    assert (workspace / "tls.pem").read_text() == "TOKEN=other\n"
    assert (workspace / "settings.py").read_text().endswith("DEBUG = False\n")


async def test_a_huge_file_shows_the_changed_lines_and_says_so(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    lines = [f"line {n}\n" for n in range(60_000)]
    (workspace / "big.txt").write_text("".join(lines))
    client = RecordingClient()
    await run_calls(tmp_path, data_dir, workspace, client,
                    ("edit", {"path": "big.txt", "old_string": "line 30000\n",
                              "new_string": "changed\n"}))
    diff, note = asked(client)["content"][:2]
    assert diff["oldText"] == "".join(lines[29997:30004])
    assert diff["newText"] == "".join([*lines[29997:30000], "changed\n", *lines[30001:30004]])
    assert "Excerpt: lines 29998-30004 of 60000" in note["content"]["text"]
    assert "over the preview limit" in note["content"]["text"]
    assert (workspace / "big.txt").read_text() == "".join(lines).replace(
        "line 30000\n", "changed\n")


async def test_an_unsaved_buffer_changed_after_the_preview_is_not_written(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """The diff came from the editor's buffer; the user typed in it before answering: the
    edit is not applied over their typing."""
    path = str(workspace / "hello.txt")
    client = RecordingClient(buffers={path: "hello, unsaved\n"})

    def type_then_allow(_call: dict[str, Any], _options: list[dict[str, Any]]) -> str:
        client.buffers[path] = "hello, unsaved and typed\n"
        return "allow_once"

    client.answer = type_then_allow
    await run_calls(tmp_path, data_dir, workspace, client,
                    ("edit", {"path": "hello.txt", "old_string": "hello", "new_string": "bye"}))
    assert asked(client)["content"][0]["oldText"] == "hello, unsaved\n"
    final = client.final(pending(client)["toolCallId"])
    assert final["status"] == "failed"
    assert "changed after the preview" in final["content"][-1]["content"]["text"]
    assert client.written == {}
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
