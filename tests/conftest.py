"""Fixtures every test can use, and how the suite runs in parallel (pytest-xdist).

scripts/test passes `-n auto --dist loadfile --no-loadscope-reorder`:
- `-n auto` is twice the cores this process may use (at least 2): the tests mostly wait on
  daemon subprocesses, editors and node, not on the CPU. ACPD_TEST_WORKERS=N overrides it
  (0 runs in this process, as does `-n 0` after the other arguments).
- Each test file is one work unit (one worker runs it, in order): module fixtures (the VS
  Code extension compiled into editors/vscode/out, long-lived daemons) are built once and
  never by two workers at once, and a test that reads what an earlier one in its file left
  still finds it. Only the files in SPLIT, long ones whose tests share nothing but
  constants, have their tests spread over the workers one by one.
- Longest work first (WEIGHTS: seconds per file, measured on a full run), so that no long
  file starts last and leaves the other workers idle at the end. A file not listed counts
  as UNKNOWN_WEIGHT: after the long ones, before the short ones.
- Every test process gets its own XDG_DATA_HOME, so that a run which leaves out
  `--data-dir` never shares the default data directory (sessions, audit log) with another
  worker or with the user's own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

SPLIT = frozenset({
    "tests/e2e/test_bypass_classes.py",
    "tests/lsp/test_run_tool.py",
    "tests/mcp/test_e2e.py",
    "tests/sandbox/test_cli.py",
})

WEIGHTS: dict[str, int] = {
    "tests/e2e/test_bypass_classes.py": 1632,
    "tests/lsp/test_run_tool.py": 497,
    "tests/mcp/test_e2e.py": 432,
    "tests/sandbox/test_cli.py": 314,
    "tests/e2e/test_cards.py": 223,
    "tests/policy/test_specs_cli.py": 210,
    "tests/e2e/test_v2_lifecycle.py": 185,
    "tests/e2e/test_sdk_tools.py": 163,
    "tests/output/test_daemon_secrets.py": 161,
    "tests/editors/nvim/test_nvim_plugin.py": 154,
    "tests/e2e/test_live_output.py": 148,
    "tests/e2e/test_sdk_loop.py": 122,
    "tests/e2e/test_robustness.py": 110,
    "tests/test_cli.py": 109,
    "tests/guards/test_transaction_cd.py": 108,
    "tests/e2e/test_sdk_policy.py": 96,
    "tests/lsp/test_prompt.py": 93,
    "tests/e2e/test_v1_additions_session.py": 83,
    "tests/plugins/test_wasi.py": 81,
    "tests/plugins/test_native.py": 77,
    "tests/mcp/test_hub.py": 76,
    "tests/diagnostics/test_runs.py": 66,
    "tests/guards/test_secret_leaks.py": 65,
    "tests/editors/test_vscode.py": 52,
    "tests/policy/test_memo.py": 51,
    "tests/policy/test_differential.py": 45,
    "tests/e2e/test_sdk_lifecycle.py": 45,
    "tests/pipeline/test_daemon.py": 41,
    "tests/sandbox/test_serve.py": 39,
    "tests/pipeline/test_tools_cli.py": 38,
    "tests/policy/test_budget.py": 34,
    "tests/e2e/test_faults_datadir.py": 34,
    "tests/checkpoint/test_daemon.py": 33,
    "tests/protocol/test_jsonrpc.py": 31,
    "tests/test_store.py": 30,
    "tests/lsp/test_progress_and_diagnostics.py": 28,
    "tests/e2e/test_ts_sdk.py": 27,
    "tests/test_demo.py": 26,
    "tests/e2e/test_burst_under_load.py": 26,
    "tests/e2e/test_faults_stop.py": 26,
    "tests/pipeline/test_path_policy.py": 24,
    "tests/e2e/test_v1_additions_info.py": 23,
    "tests/policy/test_contexts.py": 23,
    "tests/policy/test_hardlinks.py": 23,
    "tests/policy/test_reload_permissions.py": 22,
    "tests/e2e/test_v1_additions_images.py": 22,
    "tests/guards/test_fairness.py": 22,
    "tests/output/test_daemon_output.py": 22,
    "tests/web/test_e2e.py": 21,
    "tests/policy/test_reload.py": 21,
    "tests/policy/test_fastparse.py": 19,
    "tests/protocol/test_framing.py": 19,
    "tests/e2e/test_sdk_session.py": 19,
    "tests/e2e/test_faults_interrupted.py": 18,
    "tests/policy/test_properties.py": 17,
    "tests/filters/test_dedup_keys.py": 16,
    "tests/guards/test_capabilities.py": 15,
    "tests/tools/test_fs_crash.py": 15,
    "tests/checkpoint/test_watch.py": 15,
    "tests/e2e/test_faults_terminal.py": 14,
    "tests/pipeline/test_audit.py": 13,
    "tests/plugins/test_serve.py": 13,
    "tests/web/test_live.py": 12,
    "tests/policy/test_fast_paths.py": 12,
    "tests/providers/test_e2e_providers.py": 11,
    "tests/guards/test_lean.py": 10,
    "tests/policy/test_specs.py": 10,
    "tests/guards/test_error_taxonomy.py": 10,
    "tests/e2e/test_v2_session.py": 10,
}
"""Seconds each file took on a full parallel run (4 workers, 2 cores, load 10): only the
order matters, so figures from a loaded machine do."""

UNKNOWN_WEIGHT = 30

_DATA_HOME_KEY = pytest.StashKey[str]()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    override = os.environ.get("ACPD_TEST_WORKERS", "").strip()
    if override:
        return max(0, int(override))
    return max(2, 2 * len(os.sched_getaffinity(0)))


def pytest_configure(config: pytest.Config) -> None:
    data_home = tempfile.mkdtemp(prefix="acpd-test-data-")
    config.stash[_DATA_HOME_KEY] = data_home
    os.environ["XDG_DATA_HOME"] = data_home


def pytest_unconfigure(config: pytest.Config) -> None:
    data_home = config.stash.get(_DATA_HOME_KEY, None)
    if data_home is not None:
        shutil.rmtree(data_home, ignore_errors=True)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """One work unit per file, or per test for the files in SPLIT (xdist's own `loadgroup`
    marks do not group under pytest 9)."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class FileScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPLIT else path

    return FileScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest work units first, in every xdist worker alike (the controller takes the order
    of their collections); a serial run keeps pytest's order."""
    if not hasattr(config, "workerinput"):
        return
    counts: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        counts[path] = counts.get(path, 0) + 1

    def unit_weight(item: pytest.Item) -> float:
        path = item.nodeid.split("::", 1)[0]
        weight = WEIGHTS.get(path, UNKNOWN_WEIGHT)
        return weight / counts[path] if path in SPLIT else weight

    items.sort(key=unit_weight, reverse=True)  # stable: a file's tests keep their order


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "hello.txt").write_text("hello from the workspace\n")
    (path / "src").mkdir()
    (path / "src" / "main.py").write_text("print('hi')\n")
    return path

