"""The Zed guide's snippets (editors/zed/README.md, and the Zed section of README.md) are valid
JSON whose `agent_servers` entries name a command that exists after install (the `acpd` console
script beside this Python) and arguments `acpd` accepts (`acpd ARGS --help` succeeds, every
flag is one its help lists)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "editors" / "zed" / "README.md"
FENCE = re.compile(r"^```json\n(.*?)^```", re.S | re.M)


def json_blocks(text: str) -> list[str]:
    return FENCE.findall(text)


def zed_section(readme: str) -> str:
    match = re.search(r"^## Use it in Zed\n(.*?)(?=^## )", readme, re.S | re.M)
    assert match, "README.md has no '## Use it in Zed' section"
    return match.group(1)


def snippets() -> list[tuple[str, str]]:
    guide = json_blocks(GUIDE.read_text())
    found = [(f"editors/zed/README.md #{i}", b) for i, b in enumerate(guide)]
    readme = zed_section((REPO / "README.md").read_text())
    found += [(f"README.md Zed #{i}", b) for i, b in enumerate(json_blocks(readme))]
    return found


def test_there_are_snippets() -> None:
    names = [name for name, _ in snippets()]
    assert sum(n.startswith("editors/") for n in names) >= 2
    assert sum(n.startswith("README.md") for n in names) >= 1


def servers(block: str) -> dict[str, Any]:
    data = json.loads(block)
    assert isinstance(data, dict) and isinstance(data.get("agent_servers"), dict), block
    result: dict[str, Any] = data["agent_servers"]
    return result


@pytest.mark.parametrize(("where", "block"), snippets(), ids=[n for n, _ in snippets()])
def test_snippet_names_an_installed_command(where: str, block: str) -> None:
    for name, server in servers(block).items():
        assert server.get("type") == "custom", (where, name)
        command = server["command"]
        args = server.get("args", [])
        assert isinstance(command, str) and all(isinstance(a, str) for a in args), where
        assert all(isinstance(v, str) for v in server.get("env", {}).values()), where
        installed = Path(sys.executable).parent / command
        assert installed.is_file(), f"{where}: {command} is not installed beside {sys.executable}"
        assert args[:1] == ["serve"], where
        done = subprocess.run([str(installed), *args, "--help"], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, f"{where}: {done.stderr[-2000:]}"
        assert done.stdout.startswith("usage: acpd serve"), done.stdout[:200]
        for flag in (a.split("=")[0] for a in args if a.startswith("--")):
            assert re.search(rf"^\s+{re.escape(flag)}\b", done.stdout, re.M), (where, flag)


def test_a_broken_snippet_is_caught() -> None:
    # the checks above can fail: a fragment (what the guide once had) is not a settings object
    with pytest.raises((json.JSONDecodeError, AssertionError)):
        servers('"acpd": {"type": "custom", "command": "acpd"}')
