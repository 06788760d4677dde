"""`[tools.web]`: defaults, clear errors naming the field, and the settings reaching the tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpd.daemon.config import load_config
from acpd.daemon.errors import ConfigError
from acpd.net.client import SafeFetcher
from acpd.net.settings import FetchSettings
from acpd.tools.errors import ErrorCategory, ToolError

pytestmark = pytest.mark.anyio


def test_defaults(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("")
    web = load_config(str(tmp_path / "config.toml")).tools.web.fetch_settings()
    assert web == FetchSettings()
    assert web.allowed_ports == frozenset({443}) and web.max_redirects == 3


def test_settings_are_read(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[tools.web]\ntimeout_secs = 5\nmax_body_bytes = 4096\n'
                      'allowed_ports = [443, 8443]\nmax_redirects = 1\nca_file = "/x.pem"\n')
    web = load_config(str(config)).tools.web.fetch_settings()
    assert web == FetchSettings(5.0, 4096, frozenset({443, 8443}), 1, "acpd-fetch/0.1", "/x.pem")


@pytest.mark.parametrize(("line", "field"), [
    ("allowed_ports = [0]", "allowed_ports"), ("allowed_ports = [70000]", "allowed_ports"),
    ("allowed_ports = []", "allowed_ports"), ("max_redirects = 4", "max_redirects"),
    ("timeout_secs = 0", "timeout_secs"), ("max_body_bytes = 10", "max_body_bytes"),
    ('user_agent = "a\\nb"', "user_agent"), ("follow_http = true", "follow_http"),
])
def test_bad_values_are_refused_with_the_field_named(tmp_path: Path, line: str, field: str
                                                      ) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[tools.web]\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(config))
    assert field in str(caught.value)


async def test_an_unusable_ca_file_is_a_clear_failure(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ToolError) as caught:
        await SafeFetcher(FetchSettings(ca_file=str(bad))).ssl_context()
    assert caught.value.category is ErrorCategory.PERMANENT_FAILURE
    assert "ca_file" in caught.value.message
