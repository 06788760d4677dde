"""`[mcp]` in config.toml: defaults, the allowlist, and clear errors for what cannot work."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpd.daemon.config import Config, load_config
from acpd.daemon.errors import ConfigError


def load(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_config(str(path))


def test_defaults_enable_mcp_tools_and_allow_none(tmp_path: Path) -> None:
    config = load(tmp_path, "")
    assert config.mcp.enabled and config.mcp.servers == {}
    assert "mcp__*" in config.tools.enabled


def test_an_allowlist_per_server(tmp_path: Path) -> None:
    config = load(tmp_path, '[mcp]\ncall_timeout = 5\n[mcp.servers."my.srv"]\n'
                            'allow = ["echo", "get_issue"]\ncommand = "srv"\n')
    entry = config.mcp.servers["my.srv"]
    assert entry.allow == ["echo", "get_issue"] and entry.command == "srv"


@pytest.mark.parametrize(("text", "says"), [
    ('[mcp.servers.s]\nallow = ["*"]\n', "exact tool names, not globs"),
    ('[mcp.servers.s]\nallow = ["get_*"]\n', "exact tool names, not globs"),
    ('[mcp.servers.s]\nallow = "echo"\n', "mcp.servers.s.allow"),
    ('[mcp.servers.s]\nalow = ["echo"]\n', "mcp.servers.s.alow"),
    ("[mcp]\nstart_timeout = 0\n", "mcp.start_timeout"),
    ("[mcp]\nenable = true\n", "mcp.enable"),
])
def test_bad_mcp_config_says_where(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, text)
    assert says in str(err.value)
