"""tool.toml validation: every bad manifest is refused with its path and the problem, the
argument schema subset is enforced, unknown keys anywhere are errors, config warnings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpd.tools.plugins.catalog import PluginSettings, config_warnings, scan
from acpd.tools.plugins.config import CapabilitiesConfig, ToolFilterConfig
from acpd.tools.plugins.manifest import ManifestError, load_tool
from acpd.tools.schema import render_schema
from tests.plugins.helpers import add_example, add_tool, native_manifest, plugins_dir

GOOD = native_manifest("good", "run.sh", extra=(
    '[args]\nrequired = ["text"]\n[args.properties.text]\ntype = "string"\nmax_length = 5\n'
    '[args.properties.n]\ntype = "integer"\nmin = 1\nmax = 3\n'
    '[args.properties.mode]\ntype = "string"\nenum = ["a", "b"]\n'))
SCRIPT = {"run.sh": "#!/bin/sh\n"}


def _load(tmp_path: Path, manifest: str, files: dict[str, str | bytes] | None = None,
          executable: tuple[str, ...] = ("run.sh",)) -> Path:
    return add_tool(plugins_dir(tmp_path), "t", manifest, SCRIPT if files is None else files,
                    executable)


def test_a_good_manifest_gives_a_strict_schema(tmp_path: Path) -> None:
    tool = load_tool(_load(tmp_path, GOOD))
    schema = render_schema(tool.params)
    assert schema["required"] == ["text"] and schema["additionalProperties"] is False
    assert schema["properties"]["text"]["maxLength"] == 5
    assert schema["properties"]["mode"]["enum"] == ["a", "b"]
    tool.params.model_validate({"text": "abc", "n": 2, "mode": "a"})
    for bad in ({"text": "toolong"}, {"n": 2}, {"text": "a", "n": 4}, {"text": "a", "n": "2"},
                {"text": "a", "mode": "c"}, {"text": "a", "other": 1}, {"text": 5}):
        with pytest.raises(ValueError):
            tool.params.model_validate(bad)


BAD = {
    "unknown top key": (GOOD + "max_runtime = 5\n", "max_runtime: unknown key"),
    "unknown arg key": (GOOD.replace("max_length = 5", "maxlength = 5"),
                        "args.properties.text.maxlength: unknown key"),
    "bad name": (GOOD.replace('tool_name = "good"', 'tool_name = "Bad Name"'), "tool_name"),
    "required unknown": (GOOD.replace('required = ["text"]', 'required = ["nope"]'),
                         "required names undeclared properties: nope"),
    "min on a string": (GOOD.replace("max_length = 5", "min = 1"),
                        "min/max apply to integer and number only"),
    "zero runtime": (GOOD.replace("max_runtime_ms = 5000", "max_runtime_ms = 0"),
                     "max_runtime_ms"),
    "huge stdout": (GOOD.replace("max_stdout_bytes = 4096", "max_stdout_bytes = 99999999999"),
                    "max_stdout_bytes"),
    "not toml": ("tool_name = \n", "not valid TOML"),
    "entry outside": (GOOD.replace('entry = "run.sh"', 'entry = "../../x"'),
                      "is outside the plugin folder"),
    "entry missing": (GOOD.replace('entry = "run.sh"', 'entry = "nope"'), "entry 'nope'"),
    "bad mount": (GOOD + '[[mounts]]\nhost = "d"\nguest = "rel"\n', "mounts.0.guest"),
    "array arg": (GOOD.replace('type = "integer"', 'type = "array"'), "args.properties.n.type"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_manifests_are_refused_with_the_reason(tmp_path: Path, case: str) -> None:
    manifest, expected = BAD[case]
    folder = _load(tmp_path, manifest)
    with pytest.raises(ManifestError) as err:
        load_tool(folder)
    assert str(err.value).startswith(str(folder / "tool.toml"))
    assert expected in str(err.value)


def test_unsafe_files_are_refused(tmp_path: Path) -> None:
    folder = _load(tmp_path, GOOD, executable=())
    with pytest.raises(ManifestError, match="not executable"):
        load_tool(folder)
    (folder / "run.sh").chmod(0o777)
    with pytest.raises(ManifestError, match="writable by group or others"):
        load_tool(folder)
    (folder / "run.sh").chmod(0o755)
    (folder / "tool.toml").chmod(0o666)
    with pytest.raises(ManifestError, match="writable by group or others"):
        load_tool(folder)
    (folder / "tool.toml").chmod(0o644)
    real = folder / "real.toml"
    os.replace(folder / "tool.toml", real)
    (folder / "tool.toml").symlink_to(real)
    with pytest.raises(ManifestError, match="cannot read"):
        load_tool(folder)
    os.unlink(folder / "tool.toml")
    (folder / "tool.toml").write_bytes(b"#" * 70_000)
    with pytest.raises(ManifestError, match="byte cap"):
        load_tool(folder)
    (folder / "tool.toml").write_text(GOOD)
    folder.chmod(0o775)
    with pytest.raises(ManifestError, match="writable by group or others"):
        load_tool(folder)
    folder.chmod(0o755)
    load_tool(folder)


def test_scan_keeps_going_past_bad_folders_and_duplicate_names(tmp_path: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "word_count")
    add_tool(plugins, "broken", "tool_name = 1\n", {})
    twin = native_manifest("word_count", "run.sh")
    add_tool(plugins, "zz_twin", twin, SCRIPT, ("run.sh",))
    (plugins / "overlay_only").mkdir()
    found = scan(PluginSettings((plugins,), ToolFilterConfig(allow_external=True)))
    assert [t.name for t in found.tools] == ["word_count"]
    assert any("broken/tool.toml" in e for e in found.errors)
    assert any("already declared" in e and "zz_twin" in e for e in found.errors)
    assert len(found.errors) == 2


def test_config_warnings_for_dead_and_redundant_entries() -> None:
    settings = PluginSettings(
        (), ToolFilterConfig(allow_external=False,
                             external_allow_list=["bash", "core__read", "gone", "mine"]),
        CapabilitiesConfig(presets={"p": {"tools": ["ghost"]}}),  # type: ignore[dict-item]
        frozenset({"bash", "core__bash", "read", "core__read"}))
    warnings = config_warnings(settings, {"mine"})
    text = "\n".join(warnings)
    assert "no effect while allow_external = false" in text
    assert "built-in tool 'bash': redundant" in text
    assert "built-in tool 'core__read': redundant" in text
    assert "names 'gone', which no plugin folder declares (dead entry)" in text
    assert "names 'mine', which no capability preset lists (dead entry)" in text
    assert "preset 'p' lists 'ghost', which no plugin folder declares" in text


def test_an_unknown_active_preset_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="active_preset 'x' is not a preset"):
        CapabilitiesConfig(active_preset="x")
