"""Native plugin tools through `acpd tools run`: the example tool, the request it gets, the
external filter, timeouts that kill the whole process tree, output caps, bad responses."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.harness import marked, sleep_marker
from tests.plugins.helpers import (
    add_example,
    add_tool,
    native_manifest,
    plugins_dir,
    run_tool,
    tools_cli,
    write_config,
)

pytestmark = pytest.mark.slow

ECHO_REQUEST = """#!/usr/bin/env python3
import json, os, sys
request = json.load(sys.stdin)
print(json.dumps({"protocol_version": 1, "ok": True, "output": json.dumps(request),
                  "data": {"cwd": os.getcwd()}}))
"""


def test_the_example_native_tool_runs_through_the_pipeline(tmp_path: Path, workspace: Path
                                                           ) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "word_count")
    cfg = write_config(tmp_path, plugins)
    listed = tools_cli(tmp_path, cfg, "list")
    assert "plugin__word_count" in listed.stdout, listed.stderr
    done = run_tool(tmp_path, cfg, "word_count", {"text": "one two\nthree"}, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3 words, 2 lines, 13 chars"
    by_id = run_tool(tmp_path, cfg, "plugin__word_count", {"text": "a b", "unit": "words"},
                     cwd=workspace)
    assert by_id.stdout.strip() == "2 words"
    bad = run_tool(tmp_path, cfg, "word_count", {"text": "a", "unit": "pages"}, cwd=workspace)
    assert bad.returncode == 1 and "InvalidParameters" in bad.stderr
    extra = run_tool(tmp_path, cfg, "word_count", {"text": "a", "more": 1}, cwd=workspace)
    assert extra.returncode == 1 and "more" in extra.stderr
    audit = (tmp_path / "data" / "audit.jsonl").read_text()
    assert "plugin__word_count" in audit


def test_the_request_is_versioned_json_and_the_tool_runs_in_the_workspace(
        tmp_path: Path, workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_tool(plugins, "echoreq", native_manifest(
        "echoreq", "run.py", extra='[args.properties.x]\ntype = "integer"\nmin = 1\nmax = 9\n'),
        {"run.py": ECHO_REQUEST}, executable=("run.py",))
    cfg = write_config(tmp_path, plugins)
    done = run_tool(tmp_path, cfg, "echoreq", {"x": 3}, cwd=workspace)
    assert done.returncode == 0, done.stderr
    request = json.loads(done.stdout)
    assert request["protocol_version"] == 1 and request["tool"] == "echoreq"
    assert request["args"] == {"x": 3} and request["cwd"] == str(workspace)
    assert request["request_id"].startswith("cli_")
    over = run_tool(tmp_path, cfg, "echoreq", {"x": 10}, cwd=workspace)
    assert over.returncode == 1 and "less than or equal to 9" in over.stderr


def test_external_tools_are_denied_unless_allowed(tmp_path: Path, workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "word_count")
    denied = write_config(tmp_path, plugins, allow_external=False)
    listed = tools_cli(tmp_path, denied, "list")
    assert "plugin__word_count" not in listed.stdout
    assert "allow_external = true" in listed.stderr
    described = tools_cli(tmp_path, denied, "describe", "word_count")
    assert described.returncode == 2 and "external tools are denied" in described.stderr
    refused = run_tool(tmp_path, denied, "word_count", {"text": "a"}, cwd=workspace)
    assert refused.returncode == 1
    assert "category: PolicyBlocked" in refused.stderr
    assert "external tools are denied" in refused.stderr
    listed_only = write_config(tmp_path, plugins,
                               extra='external_allow_list = ["other_tool"]\n')
    refused = run_tool(tmp_path, listed_only, "plugin__word_count", {"text": "a"},
                       cwd=workspace)
    assert "not in [tools.filter] external_allow_list" in refused.stderr
    warned = tools_cli(tmp_path, listed_only, "list")
    assert "'other_tool', which no plugin folder declares (dead entry)" in warned.stderr


def test_a_preset_narrows_the_filter(tmp_path: Path, workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "word_count")
    add_tool(plugins, "echoreq", native_manifest("echoreq", "run.py"),
             {"run.py": ECHO_REQUEST}, executable=("run.py",))
    cfg = write_config(tmp_path, plugins, extra=(
        'external_allow_list = ["word_count", "echoreq", "bash"]\n'
        '[tools.capabilities]\nactive_preset = "dev"\n'
        '[tools.capabilities.presets.dev]\ntools = ["word_count"]\n'))
    assert run_tool(tmp_path, cfg, "word_count", {"text": "a"}, cwd=workspace).returncode == 0
    refused = run_tool(tmp_path, cfg, "echoreq", {}, cwd=workspace)
    assert "not in the tools of the capability preset 'dev'" in refused.stderr
    listed = tools_cli(tmp_path, cfg, "list")
    assert "names the built-in tool 'bash': redundant" in listed.stderr
    assert "names 'echoreq', which no capability preset lists (dead entry)" in listed.stderr


def test_network_tools_need_a_preset_with_network(tmp_path: Path, workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_tool(plugins, "netty", native_manifest("netty", "run.py",
                                               extra="requires_network = true\n"),
             {"run.py": ECHO_REQUEST}, executable=("run.py",))
    cfg = write_config(tmp_path, plugins)
    refused = run_tool(tmp_path, cfg, "netty", {}, cwd=workspace)
    assert "requires_network and no active capability preset has allow_network" in \
        refused.stderr
    preset = ('[tools.capabilities]\nactive_preset = "net"\n'
              '[tools.capabilities.presets.net]\ntools = ["netty"]\nallow_network = true\n')
    cfg = write_config(tmp_path, plugins, extra=preset)
    closed = run_tool(tmp_path, cfg, "netty", {}, cwd=workspace)  # the policy says no network
    assert closed.returncode == 1 and "allow_network = false" in closed.stderr
    cfg = write_config(tmp_path, plugins, extra=preset,
                       policy="[policy]\nallow_network = true\n")
    assert run_tool(tmp_path, cfg, "netty", {}, cwd=workspace).returncode == 0


SPAWNER = """#!/usr/bin/env bash
# a child in its own session that outlives us if nobody kills the tree
setsid sleep MARK &
echo started > "$PWD/started"
sleep MARK
"""


def test_a_tool_past_max_runtime_is_killed_with_its_children(tmp_path: Path, workspace: Path
                                                             ) -> None:
    marker = sleep_marker()
    plugins = plugins_dir(tmp_path)
    add_tool(plugins, "hang", native_manifest("hang", "run.sh", runtime_ms=1500),
             {"run.sh": SPAWNER.replace("MARK", marker)}, executable=("run.sh",))
    cfg = write_config(tmp_path, plugins)
    done = run_tool(tmp_path, cfg, "hang", {}, cwd=workspace)
    assert done.returncode == 1
    assert "category: Timeout" in done.stderr
    assert "max_runtime_ms (1500 ms)" in done.stderr
    assert (workspace / "started").exists()
    deadline = time.monotonic() + 10
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not marked(marker), "the tool's setsid child survived the timeout"


def test_output_past_its_cap_fails_and_a_bad_response_is_quoted(tmp_path: Path,
                                                                 workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_tool(plugins, "loud", native_manifest("loud", "run.sh", stdout=1000),
             {"run.sh": "#!/usr/bin/env bash\nyes 'xxxxxxxxxxxxxxxx'\n"},
             executable=("run.sh",))
    add_tool(plugins, "liar", native_manifest("liar", "run.sh"),
             {"run.sh": "#!/usr/bin/env bash\necho 'not json'; echo oops >&2; exit 3\n"},
             executable=("run.sh",))
    add_tool(plugins, "sad", native_manifest("sad", "run.sh"),
             {"run.sh": '#!/usr/bin/env bash\necho \'{"ok": false, "error": "no luck"}\'\n'},
             executable=("run.sh",))
    cfg = write_config(tmp_path, plugins)
    loud = run_tool(tmp_path, cfg, "loud", {}, cwd=workspace)
    assert loud.returncode == 1
    assert "more than max_stdout_bytes (1000)" in loud.stderr
    liar = run_tool(tmp_path, cfg, "liar", {}, cwd=workspace)
    assert "its response is not JSON: 'not json\\n'" in liar.stderr
    assert "stderr: oops" in liar.stderr and "exit code 3" in liar.stderr
    sad = run_tool(tmp_path, cfg, "sad", {}, cwd=workspace)
    assert sad.returncode == 1 and "error: no luck" in sad.stdout + sad.stderr


def test_a_native_tool_is_sandboxed_like_bash(tmp_path: Path, workspace: Path) -> None:
    from acpd.sandbox.status import sandbox_status

    if not sandbox_status().available:
        pytest.skip(f"no sandbox here: {sandbox_status().reason}")
    (workspace / ".env").write_text("SECRET=1\n")
    outside = tmp_path / "outside.txt"
    script = f"""#!/usr/bin/env bash
cat .env >/dev/null 2>&1 && env_read=yes || env_read=no
echo x > {outside} 2>/dev/null && wrote=yes || wrote=no
echo x > inside.txt
printf '{{"ok": true, "output": "env=%s outside=%s"}}' "$env_read" "$wrote"
"""
    plugins = plugins_dir(tmp_path)
    add_tool(plugins, "prober", native_manifest("prober", "run.sh"), {"run.sh": script},
             executable=("run.sh",))
    cfg = write_config(tmp_path, plugins)
    done = run_tool(tmp_path, cfg, "prober", {}, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "env=no" in done.stdout  # deny_read masked; a write outside lands nowhere real
    assert not outside.exists() and (workspace / "inside.txt").exists()
