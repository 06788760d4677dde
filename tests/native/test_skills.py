"""SKILL.md discovery and validation on real folders (symlinks, hard links, sizes, YAML)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpd.tools.native.config import SkillsConfig
from acpd.tools.native.skills import (
    MAX_SKILL_BYTES,
    SkillCatalog,
    SkillError,
    describe,
    load_from,
    parse_skill,
)

GOOD = "---\nname: demo\ndescription: A demo skill\n---\nBody line.\n"


def write(root: Path, folder: str, text: str) -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / folder / "SKILL.md").write_text(text)
    return root / folder / "SKILL.md"


@pytest.mark.parametrize(("text", "fault"), [
    ("no frontmatter\n", "no frontmatter"),
    ("--- x\nname: demo\n---\n", "'---' alone"),
    ("---\nname: demo\ndescription: d\n", "not closed"),
    ("---\n- a\n- b\n---\n", "must be a mapping"),
    ("---\n\n---\n", "must be a mapping"),
    ("---\nname: demo\n---\n", "lacks description"),
    ("---\ndescription: d\n---\n", "lacks name"),
    ("---\n{}\n---\n", "lacks name and description"),
    ("---\nname: Demo\ndescription: d\n---\n", "lowercase"),
    ("---\nname: -demo\ndescription: d\n---\n", "lowercase"),
    ("---\nname: 7\ndescription: d\n---\n", "lowercase"),
    ("---\nname: other\ndescription: d\n---\n", "differs from its folder"),
    ("---\nname: demo\ndescription: ''\n---\n", "non-empty"),
    ("---\nname: demo\ndescription: [a, b]\n---\n", "non-empty string"),
    ("---\nname: demo\ndescription: " + "d" * 1025 + "\n---\n", "longer than 1024"),
    ("---\nname: demo\ndescription: d: e: f\n---\n", "not valid YAML"),
    ("---\nname: !!python/object:os.system x\ndescription: d\n---\n", "not valid YAML"),
    ("---\na: &a [x]\nb: [*a, *a]\nname: demo\n---\n", "lacks description"),
    ("---\n" + "k: v\n" * 5000 + "---\n", "larger than"),
])
def test_bad_frontmatter_is_refused_with_the_reason(text: str, fault: str) -> None:
    with pytest.raises(SkillError, match=r"/x/demo/SKILL\.md: ") as caught:
        parse_skill(text, "/x/demo/SKILL.md", "demo")
    assert fault in str(caught.value)


def test_a_good_skill_gives_its_body_and_one_line_description() -> None:
    skill = parse_skill("---\nname: demo\ndescription: >\n  two\n  lines\n---\n\nBody.\n",
                        "p", "demo")
    assert (skill.name, skill.description, skill.body) == ("demo", "two lines", "Body.")


def test_nothing_outside_the_root_is_read(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    root.mkdir()
    secret = tmp_path / "secret.md"
    secret.write_text(GOOD)
    (root / "demo").mkdir()
    (root / "demo" / "SKILL.md").symlink_to(secret)
    with pytest.raises(SkillError, match="outside"):
        load_from(root, "demo")
    (root / "linked").symlink_to(tmp_path / "elsewhere")
    write(tmp_path, "elsewhere", GOOD.replace("demo", "linked"))
    with pytest.raises(SkillError, match="outside"):
        load_from(root, "linked")
    write(tmp_path / "src", "hard", GOOD.replace("demo", "hard"))
    (root / "hard").mkdir()
    os.link(tmp_path / "src" / "hard" / "SKILL.md", root / "hard" / "SKILL.md")
    with pytest.raises(SkillError, match="hard links"):
        load_from(root, "hard")
    (root / "dir").mkdir()
    (root / "dir" / "SKILL.md").mkdir()
    with pytest.raises(SkillError, match=r"not a regular file|Is a directory"):
        load_from(root, "dir")
    write(root, "big", GOOD.replace("demo", "big") + "x" * MAX_SKILL_BYTES)
    with pytest.raises(SkillError, match="larger than"):
        load_from(root, "big")
    (root / "bin").mkdir()
    (root / "bin" / "SKILL.md").write_bytes(b"---\nname: bin\n\xff\xfe\n---\n")
    with pytest.raises(SkillError, match="not UTF-8"):
        load_from(root, "bin")
    assert load_from(root, "absent") is None


def test_roots_in_order_and_the_workspace_cannot_shadow_or_escape(tmp_path: Path) -> None:
    fixed, ws = tmp_path / "fixed", tmp_path / "ws"
    write(fixed, "demo", GOOD)
    write(ws / ".acpd" / "skills", "demo", GOOD.replace("Body line.", "WORKSPACE"))
    write(ws / ".acpd" / "skills", "local", GOOD.replace("demo", "local"))
    write(ws / ".acpd" / "skills", "broken", "---\nname: broken\n---\n")
    catalog = SkillCatalog((fixed,), SkillsConfig())
    found = catalog.find("demo", str(ws))
    assert found is not None and found.body == "Body line."
    skills, errors = catalog.scan(str(ws))
    assert sorted(skills) == ["demo", "local"]
    assert len(errors) == 1 and "lacks description" in errors[0]
    assert "demo: A demo skill" in describe(catalog) and "local" not in describe(catalog)
    off = SkillCatalog((fixed,), SkillsConfig(workspace_dir=False))
    assert off.find("local", str(ws)) is None
    away = tmp_path / "away"
    write(away, "far", GOOD.replace("demo", "far"))
    ws2 = tmp_path / "ws2"
    (ws2 / ".acpd").mkdir(parents=True)
    (ws2 / ".acpd" / "skills").symlink_to(away)
    assert catalog.find("far", str(ws2)) is None


def test_a_folder_swapped_for_a_symlink_after_the_check_does_not_lead_out(tmp_path: Path) -> None:
    """What a swap between the realpath check and the open would give: the open itself
    refuses to leave the root."""
    from acpd.tools.native.skills import _open_beneath

    root = tmp_path / "skills"
    root.mkdir()
    write(tmp_path / "away", "demo", GOOD)
    (root / "demo").symlink_to(tmp_path / "away" / "demo")
    with pytest.raises(SkillError, match="outside"):
        _open_beneath(str(root.resolve()), "demo/SKILL.md", "shown")
    write(root, "inside", GOOD.replace("demo", "inside"))
    fd = _open_beneath(str(root.resolve()), "inside/SKILL.md", "shown")
    os.close(fd)
