"""Images in prompts over the official Python SDK with the scripted provider: the
capability follows the configured model, bad images get a clear -32602 and change nothing,
a good one is kept and replayed by `session/load`. Schema-checked (v1) on every run. The
providers' wire forms are checked against the fake model server in tests/providers."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from acp import RequestError

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, write_script
from tests.e2e.test_sdk_lifecycle import updates_before_response
from tests.providers.test_e2e_images import PNG, png_bytes

pytestmark = pytest.mark.anyio


def image(data: str = PNG, mime: str = "image/png") -> dict[str, str]:
    return {"type": "image", "mimeType": mime, "data": data}


def config(tmp: Path, extra: str = "") -> dict[str, str]:
    path = tmp / "acpd.toml"
    path.write_text(f'[agent]\nimage_models = ["scripted:*"]\n{extra}')
    return {"ACPD_CONFIG": str(path)}


async def test_image_capability_follows_the_configured_model(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "ok"}])
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    env=config(tmp_path)) as run:
        answer = await run.initialize()
        assert answer.agent_capabilities.prompt_capabilities.image is True
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    name="plain") as run:
        answer = await run.initialize()
        assert answer.agent_capabilities.prompt_capabilities.image is False


async def test_bad_images_are_refused_and_a_good_one_is_replayed(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "a green pixel"}])
    big = base64.b64encode(png_bytes() + b"\0" * 4096).decode()
    bad = {
        "too large": image(big),
        "not base64": image("%%%not-base64%%%"),
        "wrong type": image(PNG, "image/svg+xml"),
        "lies about its type": image(PNG, "image/jpeg"),
        "uri only": {"type": "image", "mimeType": "image/png", "data": "", "uri": "file:///x"},
    }
    client = RecordingClient()
    env = config(tmp_path, "max_image_bytes = 1024\n")
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client, env=env, name="first") as run:
        session_id = await run.open_session()
        for label, block in bad.items():
            with pytest.raises(RequestError) as caught:
                await run.raw("session/prompt", {"sessionId": session_id, "prompt": [
                    {"type": "text", "text": "look"}, block]})
            assert caught.value.code == -32602, label
            assert "image 1" in str(caught.value), label
        # Nothing was kept of the refused prompts: no title, no turn.
        assert (await run.conn.list_sessions()).sessions[0].title is None
        answer = await run.raw("session/prompt", {"sessionId": session_id, "prompt": [
            {"type": "text", "text": "what is this?"}, image()]})
        assert answer["stopReason"] == "end_turn"
        assert client.texts() == "a green pixel"

    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    env=env, name="second") as run:
        await run.initialize()
        await run.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replay = updates_before_response(run.wire(), "session/load")
    user = [u for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["type"] for u in user] == ["text", "image"]
    assert user[1]["content"]["data"] == PNG
    assert user[0]["messageId"] == user[1]["messageId"]


async def test_a_model_without_images_reads_a_note_instead(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "noted"}])
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script) as run:
        session_id = await run.open_session()
        answer = await run.raw("session/prompt", {"sessionId": session_id, "prompt": [
            {"type": "text", "text": "look"}, image("%%%")]})
        assert answer["stopReason"] == "end_turn"
