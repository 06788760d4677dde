"""`acpd policy check|explain|test` through argparse, as the daemon's CLI will call them."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import pytest

from acpd.policy import cli
from acpd.policy.cli_args import register

from .conftest import CORPUS, REFERENCE


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="acpd")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code = cli.run(args)
    return code, capsys.readouterr().out


def test_check_json(capsys: pytest.CaptureFixture[str], workspace: str) -> None:
    code, out = _run(["policy", "check", "--config", str(REFERENCE), "--cwd", workspace,
                      "--json", "--", "git", "push", "--force"], capsys)
    data = json.loads(out)
    assert code == 2 and data["verdict"] == "deny" and "git.push-force" in data["rules"]
    assert set(data) == {"verdict", "reasons", "rules", "policy_hash"}


def test_check_text_and_exit_codes(capsys: pytest.CaptureFixture[str], workspace: str) -> None:
    code, out = _run(["policy", "check", "--config", str(REFERENCE), "--cwd", workspace, "--",
                      "ls -la"], capsys)
    assert code == 0 and out.startswith("allow")
    code, out = _run(["policy", "check", "--config", str(REFERENCE), "--cwd", workspace, "--",
                      "npx x"], capsys)
    assert code == 1 and "package.run" in out


def test_check_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[policy\n")
    err = io.StringIO()
    assert cli.check("ls", config=bad, out=io.StringIO(), err=err) == 3
    assert "not valid TOML" in err.getvalue()


def test_explain_shows_sources(tmp_path: Path) -> None:
    plugin = tmp_path / "plugins" / "team"
    plugin.mkdir(parents=True)
    (plugin / "plugin.toml").write_text(
        '[shell]\nblocked_commands = ["terraform"]\n'
        '[[shell.rules]]\nid = "no-docker-run"\nverdict = "deny"\ncommands = ["docker"]\n'
        'subcommands = ["run"]\n')
    out = io.StringIO()
    assert cli.explain(config=REFERENCE, plugin_dirs=[tmp_path / "plugins"], out=out) == 0
    text = out.getvalue()
    assert "terraform" in text and "plugin.team.no-docker-run" in text
    assert str(plugin / "plugin.toml") in text and str(REFERENCE) in text
    out = io.StringIO()
    cli.explain(config=REFERENCE, as_json=True, out=out)
    data = json.loads(out.getvalue())
    assert {r["source"] for r in data["rules"]} == {str(REFERENCE)}


def test_test_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(["policy", "test", "--config", str(REFERENCE), str(CORPUS)], capsys)
    assert code == 0 and "204/204 (100.0 %)" in out and "52/52 (100.0 %)" in out
    code, out = _run(["policy", "test", str(CORPUS)], capsys)  # the default policy differs
    assert code == 1
    print(out, file=sys.stderr)


def test_the_light_argument_module_offers_every_trust_level() -> None:
    from acpd.policy.cli_args import TRUST_CHOICES
    from acpd.policy.rules import TRUST_LEVELS

    assert TRUST_CHOICES == TRUST_LEVELS


def test_acpd_policy_check_through_the_main_command(tmp_path: Path) -> None:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "acpd", "policy", "check", "--json", "--cwd", str(tmp_path),
         "--", "git push --force origin main"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2, result.stderr
    decision = json.loads(result.stdout)
    assert decision["verdict"] == "deny" and decision["policy_hash"]
