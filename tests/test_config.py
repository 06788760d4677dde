"""config.toml: defaults, and clear errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpd.daemon.config import load_config
from acpd.daemon.errors import ConfigError


def test_protocol_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no user config.toml here
    protocol = load_config(None, {}).protocol
    assert protocol.linger_us == 100 and protocol.max_line_bytes == 64 * 1024 * 1024


@pytest.mark.parametrize("value", ["-1", "10001", '"fast"'])
def test_a_bad_linger_is_refused_with_the_field_named(tmp_path: Path, value: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[protocol]\nlinger_us = {value}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(config))
    assert str(config) in str(caught.value) and "linger_us" in str(caught.value)


def test_linger_can_be_turned_off(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[protocol]\nlinger_us = 0\n")
    assert load_config(str(config)).protocol.linger_us == 0
