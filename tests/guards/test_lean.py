"""Item 13: what the first session does not need stays unloaded. pydantic's plugin finder
(importlib.metadata, with email, zipfile and csv) is kept out of `acpd serve`: checked in the
real daemon's memory map once its runtime is loaded (the `_csv` extension module is mapped only
when csv is imported), and the stand-in hands over to the real loader for anything else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import daemon_env
from tests.helpers.daemon import raw_daemon


def _csv_is_a_shared_library() -> bool:
    import _csv

    return getattr(_csv, "__file__", None) is not None


@pytest.mark.skipif(not _csv_is_a_shared_library(), reason="_csv is built into this Python")
@pytest.mark.parametrize("plugins", [False, True], ids=["default", "ACPD_PYDANTIC_PLUGINS=1"])
def test_the_loaded_runtime_has_no_plugin_finder(
    plugins: bool, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    env = daemon_env(tmp_path, {"ACPD_PYDANTIC_PLUGINS": "1"} if plugins else None)
    with raw_daemon(data_dir, env=env) as peer:
        peer.initialize()
        reply = peer.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert "result" in reply, reply
        maps = Path(f"/proc/{peer.proc.pid}/maps").read_text()
    assert ("/_csv." in maps) is plugins


def test_the_stand_in_hands_over_to_the_real_loader() -> None:
    code = (
        "import sys\n"
        "from acpd.daemon.lean import skip_pydantic_plugins\n"
        "assert skip_pydantic_plugins()\n"
        "import pydantic\n"
        "class M(pydantic.BaseModel):\n"
        "    x: int\n"
        "assert M(x=1).x == 1 and 'importlib.metadata' not in sys.modules\n"
        "from pydantic.plugin import _loader\n"
        "assert _loader.PYDANTIC_ENTRY_POINT_GROUP == 'pydantic'\n"
        "assert 'importlib.metadata' in sys.modules\n"
        "assert not skip_pydantic_plugins()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
