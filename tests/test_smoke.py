from __future__ import annotations

from pathlib import Path

from tests.helpers.daemon import raw_daemon, write_script


def test_scripted_prompt_reads_a_file_through_the_editor(
    data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]}, {"text": "ok"}],
    )
    with raw_daemon(data_dir, "--model", f"scripted:{script}") as peer:
        assert peer.initialize(fs={"readTextFile": True})["result"]["protocolVersion"] == 1
        new = peer.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "read it"}]}
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt})
        seen = []
        while True:
            msg = peer.recv()
            assert msg is not None
            if msg.get("method") == "fs/read_text_file":
                assert msg["params"]["path"] == str(workspace / "hello.txt")
                peer.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": "BUFFER"}})
            elif msg.get("method") == "session/update":
                seen.append(msg["params"]["update"])
            elif msg.get("id") == 1:
                assert msg["result"] == {"stopReason": "end_turn"}
                break
        final = [u for u in seen if u.get("status") == "completed"]
        assert final and final[0]["content"][0]["content"]["text"] == "BUFFER"
        assert peer.close() == 0
