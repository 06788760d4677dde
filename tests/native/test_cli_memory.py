"""`acpd tools run memory_save|memory_search|load_skill` as real subprocesses: memory kept in the
data dir across runs, per project, found by words; hostile queries; limits; skills listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def acpd(tmp_path: Path, *args: str, config: str = "", cwd: Path | None = None,
         ) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "acpd.toml"
    cfg.write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACPD_")}
    env.update(PYTHONPATH=str(REPO / "src"), ACPD_CONFIG=str(cfg),
               XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    where = ["--cwd", str(cwd)] if cwd is not None and args[:2] == ("tools", "run") else []
    return subprocess.run(
        [sys.executable, "-m", "acpd", *args, *where, "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL,
    )


def save(tmp_path: Path, ws: Path, content: str) -> subprocess.CompletedProcess[str]:
    return acpd(tmp_path, "tools", "run", "memory_save", "--args",
                json.dumps({"content": content}), "--mode", "auto", cwd=ws)


def search(tmp_path: Path, ws: Path, query: str, limit: int | None = None,
           ) -> subprocess.CompletedProcess[str]:
    args: dict[str, object] = {"query": query}
    if limit is not None:
        args["limit"] = limit
    return acpd(tmp_path, "tools", "run", "memory_search", "--args", json.dumps(args), cwd=ws)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_a_later_run_finds_what_an_earlier_run_saved_by_words(tmp_path: Path, ws: Path) -> None:
    first = save(tmp_path, ws, "Run the test suite with ./scripts/test before every commit")
    assert first.returncode == 0, first.stderr
    assert "saved as memory #1" in first.stdout
    assert save(tmp_path, ws, "Deploys go out on Fridays from the release branch").returncode == 0
    assert list((tmp_path / "data" / "native" / "memory").glob("*.sqlite3"))
    # A question in other words and forms: "running" and "tests" stem to "run" and "test".
    found = search(tmp_path, ws, "how are tests running here?")
    assert found.returncode == 0, found.stderr
    assert "Run the test suite" in found.stdout and "Fridays" not in found.stdout
    # Another project does not see them; the same project by a symlink does.
    other = tmp_path / "other"
    other.mkdir()
    elsewhere = search(tmp_path, other, "tests")
    assert elsewhere.returncode == 0 and "no memories match" in elsewhere.stdout
    link = tmp_path / "link"
    link.symlink_to(ws)
    both = search(tmp_path, link, 'deploy "tests" NEAR(')  # FTS syntax is only words here
    assert "Run the test suite" in both.stdout and "Fridays" in both.stdout, both.stderr
    # The audit has each call, not the note itself.
    audit = (tmp_path / "data" / "audit.jsonl").read_text()
    assert "memory_save" in audit and "Fridays" not in audit


def test_limits_and_approval_from_the_cli(tmp_path: Path, ws: Path) -> None:
    bad = search(tmp_path, ws, "x", 51)
    assert bad.returncode == 1 and "InvalidParameters" in bad.stderr
    asked = acpd(tmp_path, "tools", "run", "memory_save", "--args", '{"content": "x"}', cwd=ws)
    assert asked.returncode == 1 and "ConfirmationRequired" in asked.stderr


def write_skill(root: Path, folder: str, text: str) -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    path = root / folder / "SKILL.md"
    path.write_text(text)
    return path


def test_load_skill_lists_the_skills_and_returns_the_body(tmp_path: Path, ws: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "release-notes", "---\nname: release-notes\ndescription: How we write "
                "release notes\n---\n# Release notes\nOne line per change.\n")
    write_skill(skills, "broken", "---\nname: broken\n---\nno description\n")
    user = tmp_path / "xdg" / "acpd" / "skills"
    write_skill(user, "user-skill", "---\nname: user-skill\ndescription: the user's own\n---\nU\n")
    config = f'[tools.native.skills]\ndirs = ["{skills}"]\n'
    described = acpd(tmp_path, "tools", "describe", "load_skill", config=config)
    assert described.returncode == 0, described.stderr
    description = json.loads(described.stdout)["description"]
    assert "release-notes: How we write release notes" in description
    assert "user-skill" in description and "broken" not in description
    broken = acpd(tmp_path, "tools", "run", "load_skill", "--args", '{"name": "broken"}',
                  cwd=ws, config=config)
    assert broken.returncode == 1 and "lacks description" in broken.stderr
    assert "broken/SKILL.md" in broken.stderr
