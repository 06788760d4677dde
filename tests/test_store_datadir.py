"""open_store on data directories that cannot hold the store: named, with the cause, and a
store in memory that works (real files, real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpd.daemon.store import data_dir_problem, open_store


def make(tmp_path: Path, kind: str) -> tuple[Path, str]:
    blocker = tmp_path / "blocker"
    data = tmp_path / "data"
    if kind == "a-file":
        blocker.write_text("x")
        return blocker, f"{blocker} is not a directory"
    if kind == "under-a-file":
        blocker.write_text("x")
        return blocker / "deeper" / "acpd", f"{blocker} is not a directory"
    data.mkdir()
    if kind == "database-is-a-directory":
        (data / "sessions.sqlite3").mkdir()
        return data, "sessions.sqlite3 is not a regular file"
    (data / "sessions.sqlite3").write_bytes(b"not a database at all " * 200)
    return data, "sessions.sqlite3: file is not a database"


@pytest.mark.parametrize(
    "kind", ["a-file", "under-a-file", "database-is-a-directory", "database-is-garbage"]
)
def test_an_unusable_data_dir_is_named_and_the_store_runs_in_memory(
    tmp_path: Path, kind: str
) -> None:
    directory, cause = make(tmp_path, kind)
    store, problem = open_store(directory)
    assert problem is not None
    assert problem.startswith(f"cannot use the data directory {directory}: ") and cause in problem
    store.create("s1", str(tmp_path), "ask", None)
    store.append_message("s1", {"role": "user", "text": "hi"})
    assert store.get("s1") is not None and store.messages("s1")[0]["text"] == "hi"
    store.close()
    if kind == "database-is-garbage":
        assert (directory / "sessions.sqlite3").read_bytes().startswith(b"not a database")


def test_a_usable_data_dir_has_no_problem_and_is_created(tmp_path: Path) -> None:
    directory = tmp_path / "new" / "acpd"
    assert data_dir_problem(directory) is None
    store, problem = open_store(directory)
    assert problem is None and (directory / "sessions.sqlite3").is_file()
    store.close()
