"""Each file tool: the happy path and each error, with both resolvers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from acpd.tools.errors import ErrorCategory
from acpd.tools.fs import FS_SPECS, FileToolsConfig
from acpd.tools.registry import ToolRegistry
from acpd.tools.spec import DiffItem, Effect
from tests.tools.conftest import ResolverKind, Tools, make_ctx

# --- the specs ---------------------------------------------------------------------------


def test_specs_are_namespaced_unique_and_registrable() -> None:
    registry = ToolRegistry(FS_SPECS)
    names = {spec.name for spec in registry}
    assert names == {
        "read", "list_directory", "find_path", "grep", "write", "edit", "create_directory",
        "delete_path", "move_path", "copy_path",
    }
    for spec in registry:
        assert spec.id == f"core__{spec.name}"
        schema = spec.input_schema()
        assert schema["additionalProperties"] is False
        assert not {"oneOf", "allOf", "not", "if"} & set(str(schema).split("'"))
    read_only = {s.name for s in registry if s.effect is Effect.READ_ONLY}
    assert read_only == {"read", "list_directory", "find_path", "grep"}


def test_unknown_keys_are_refused() -> None:
    spec = {s.name: s for s in FS_SPECS}["read"]
    with pytest.raises(ValidationError):
        spec.params.model_validate({"path": "a", "mode": "x"})


# --- read ------------------------------------------------------------------------------------


def test_read_whole_and_by_lines(tools: Tools, ws: Path) -> None:
    out = tools("read", path="hello.txt")
    assert out.text == "hello\nworld\n"
    assert out.raw["path"] == str(ws / "hello.txt")
    assert tools("read", path="hello.txt", offset=2, limit=1).text == "world\n"
    assert tools("read", path=str(ws / "src/main.py")).text == "print('hi')\n"


def test_read_truncates_long_files_with_a_continuation(ws: Path, resolver: ResolverKind) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1000)))
    tools = Tools(make_ctx(ws), FileToolsConfig(resolver=resolver, max_read_chars=100))
    out = tools("read", path="big.txt")
    assert out.raw["truncated"] is True
    assert "continue with offset=" in out.text


def test_read_errors(tools: Tools, ws: Path) -> None:
    assert "No such file" in tools.failed("read", path="missing.txt").message
    assert "directory" in tools.failed("read", path="src").message
    (ws / "bin.dat").write_bytes(b"\xff\xfe\x00\x01")
    assert "UTF-8" in tools.failed("read", path="bin.dat").message
    assert tools.failed("read", path="hello.txt/").category is ErrorCategory.PERMANENT_FAILURE
    err = tools.error("read", path="a\x00b")
    assert err.category is ErrorCategory.INVALID_PARAMETERS


def test_read_follows_symlinks_that_stay_inside(tools: Tools, ws: Path) -> None:
    (ws / "link.txt").symlink_to("src/main.py")
    (ws / "src" / "up").symlink_to("../hello.txt")
    (ws / "srclink").symlink_to("src")
    assert tools("read", path="link.txt").text == "print('hi')\n"
    assert tools("read", path="src/up").text == "hello\nworld\n"
    out = tools("read", path="srclink/main.py")
    assert out.raw["path"] == str(ws / "src" / "main.py")


# --- list_directory ---------------------------------------------------------------------------


def test_list_directory_classifies_by_lstat(tools: Tools, ws: Path, outside: Path) -> None:
    (ws / "out").symlink_to(outside)
    (ws / ".hello.txt.acpd-1-0000abcd.tmp").write_text("temp")
    text = tools("list_directory", path=".").text
    assert text.splitlines() == ["[dir] src", "[file] hello.txt", "[symlink] out"]
    assert tools("list_directory", path="src").text == "[file] main.py"
    (ws / "empty").mkdir()
    assert tools("list_directory", path="empty").text == "(empty directory)"


def test_list_directory_errors(tools: Tools) -> None:
    tools.failed("list_directory", path="missing")
    tools.failed("list_directory", path="hello.txt")
    tools.blocked("list_directory", path="..")


# --- find_path ---------------------------------------------------------------------------------


def test_find_path_globs_and_caps(ws: Path, resolver: ResolverKind) -> None:
    for i in range(7):
        (ws / "src" / f"m{i}.py").write_text("")
    tools = Tools(make_ctx(ws), FileToolsConfig(resolver=resolver, find_limit=5))
    out = tools("find_path", path=".", pattern="**/*.py")
    lines = out.text.splitlines()
    assert lines[:5] == ["src/m0.py", "src/m1.py", "src/m2.py", "src/m3.py", "src/m4.py"]
    assert lines[-1] == "[showing 5 of 8 matches]"
    assert out.raw == {"matches": 8, "shown": 5, "complete": True}
    assert tools("find_path", path="src", pattern="main.*").text == "src/main.py"
    assert "no paths match" in tools("find_path", path=".", pattern="*.rs").text


def test_find_path_does_not_enter_symlinked_directories(
    tools: Tools, ws: Path, outside: Path
) -> None:
    (ws / "out").symlink_to(outside)
    (ws / "loop").symlink_to(".")
    text = tools("find_path", path=".", pattern="**/secret.txt").text
    assert "no paths match" in text
    assert tools("find_path", path=".", pattern="out").text == "out"


def test_find_path_errors(tools: Tools) -> None:
    assert tools.error("find_path", path=".", pattern="/etc/*").category is (
        ErrorCategory.INVALID_PARAMETERS
    )
    tools.error("find_path", path=".", pattern="../*")
    tools.failed("find_path", path="missing", pattern="*")
    tools.blocked("find_path", path="/etc", pattern="*")


# --- grep ------------------------------------------------------------------------------------


def test_grep_matches_case_and_skips(tools: Tools, ws: Path) -> None:
    (ws / "src" / "util.py").write_text("def Hello():\n    return 'hello'\n")
    (ws / "blob.bin").write_bytes(b"hello\x00\x01")
    (ws / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.py").write_text("hello\n")
    (ws / "debug.log").write_text("hello\n")
    (ws / "keep.log").write_text("hello\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("hello\n")
    out = tools("grep", pattern="hello")
    lines = out.text.splitlines()
    assert "hello.txt:1: hello" in lines
    assert "keep.log:1: hello" in lines
    assert "src/util.py:1: def Hello():" in lines
    assert "src/util.py:2:     return 'hello'" in lines
    joined = out.text
    assert "build/out.py" not in joined and "debug.log:" not in joined
    assert "blob.bin:" not in joined and ".git/" not in joined
    assert "1 binary files" in joined and "ignored by .gitignore" in joined
    sensitive = tools("grep", pattern="Hello", case_sensitive=True).text
    assert "src/util.py:1: def Hello():" in sensitive and "hello.txt:1" not in sensitive


def test_grep_nested_gitignore_and_single_file(tools: Tools, ws: Path) -> None:
    (ws / "src" / ".gitignore").write_text("gen_*.py\n")
    (ws / "src" / "gen_a.py").write_text("needle\n")
    (ws / "src" / "real.py").write_text("needle\n")
    (ws / "other").mkdir()
    (ws / "other" / "gen_b.py").write_text("needle\n")
    text = tools("grep", pattern="needle").text
    assert "src/real.py:1: needle" in text and "other/gen_b.py:1: needle" in text
    assert "gen_a.py" not in text
    # Starting inside src still honours src/.gitignore; naming the file searches it anyway.
    assert "gen_a.py" not in tools("grep", pattern="needle", path="src").text
    assert "src/gen_a.py:1: needle" in tools("grep", pattern="needle", path="src/gen_a.py").text


def test_grep_caps_results(ws: Path, resolver: ResolverKind) -> None:
    (ws / "many.txt").write_text("x\n" * 50)
    tools = Tools(make_ctx(ws), FileToolsConfig(resolver=resolver, grep_limit=10))
    out = tools("grep", pattern="x", path="many.txt")
    assert len([line for line in out.text.splitlines() if line.startswith("many.txt:")]) == 10
    assert "more exist" in out.text and out.raw["truncated"] is True


def test_grep_errors(tools: Tools) -> None:
    assert tools.error("grep", pattern="(").category is ErrorCategory.INVALID_PARAMETERS
    tools.failed("grep", pattern="x", path="missing")
    tools.blocked("grep", pattern="x", path="/etc")


# --- write -----------------------------------------------------------------------------------


def test_write_creates_and_replaces_atomically(tools: Tools, ws: Path) -> None:
    out = tools("write", path="new/dir/a.txt", content="one\n")
    assert (ws / "new" / "dir" / "a.txt").read_text() == "one\n"
    assert out.content == [DiffItem(str(ws / "new/dir/a.txt"), None, "one\n")]
    os.chmod(ws / "hello.txt", 0o600)
    out = tools("write", path="hello.txt", content="bye\n")
    assert (ws / "hello.txt").read_text() == "bye\n"
    assert os.stat(ws / "hello.txt").st_mode & 0o777 == 0o600
    assert out.content == [DiffItem(str(ws / "hello.txt"), "hello\nworld\n", "bye\n")]
    assert [p.name for p in ws.iterdir() if ".acpd-" in p.name] == []


def test_write_through_an_inside_symlink_replaces_the_target(tools: Tools, ws: Path) -> None:
    (ws / "alias.txt").symlink_to("src/main.py")
    tools("write", path="alias.txt", content="new\n")
    assert (ws / "alias.txt").is_symlink()
    assert (ws / "src" / "main.py").read_text() == "new\n"


def test_write_errors(tools: Tools, ws: Path) -> None:
    assert "directory" in tools.failed("write", path="src", content="x").message
    tools.failed("write", path="hello.txt/x", content="x")
    tools.blocked("write", path="/etc/acpd-test", content="x")
    tools.blocked("write", path=".", content="x")


def test_write_removes_stale_temp_files_of_dead_writers(tools: Tools, ws: Path) -> None:
    stale = ws / ".hello.txt.acpd-999999999-0123abcd.tmp"
    stale.write_text("half")
    mine = ws / f".x.acpd-{os.getpid()}-0123abcd.tmp"
    mine.write_text("in progress")
    tools("write", path="other.txt", content="x")
    assert not stale.exists()
    assert mine.exists()


# --- edit ------------------------------------------------------------------------------------


def test_edit_replaces_the_unique_match_and_carries_a_diff(tools: Tools, ws: Path) -> None:
    out = tools("edit", path="hello.txt", old_string="world", new_string="there")
    assert (ws / "hello.txt").read_text() == "hello\nthere\n"
    assert out.content == [DiffItem(str(ws / "hello.txt"), "hello\nworld\n", "hello\nthere\n")]


def test_edit_errors(tools: Tools, ws: Path) -> None:
    err = tools.failed("edit", path="hello.txt", old_string="nope", new_string="x")
    assert "not found" in err.message
    (ws / "twice.txt").write_text("a a\n")
    err = tools.failed("edit", path="twice.txt", old_string="a", new_string="b")
    assert "2 times" in err.message and "unique" in err.message
    assert (ws / "twice.txt").read_text() == "a a\n"
    err = tools.error("edit", path="hello.txt", old_string="hello", new_string="hello")
    assert err.category is ErrorCategory.INVALID_PARAMETERS
    tools.failed("edit", path="missing.txt", old_string="a", new_string="b")
    tools.blocked("edit", path="../x", old_string="a", new_string="b")


# --- create_directory, delete_path -----------------------------------------------------------


def test_create_directory(tools: Tools, ws: Path) -> None:
    tools("create_directory", path="a/b/c")
    assert (ws / "a" / "b" / "c").is_dir()
    tools("create_directory", path="a/b")
    assert "Not a directory" in tools.failed("create_directory", path="hello.txt/x").message
    tools.blocked("create_directory", path="../sibling")


def test_delete_path(tools: Tools, ws: Path) -> None:
    tools("delete_path", path="hello.txt")
    assert not (ws / "hello.txt").exists()
    (ws / "src" / "deep").mkdir()
    (ws / "src" / "deep" / "f").write_text("x")
    tools("delete_path", path="src")
    assert not (ws / "src").exists()
    tools.failed("delete_path", path="missing")


def test_delete_never_the_root_or_above(tools: Tools, ws: Path) -> None:
    for path in (".", "./", str(ws), "src/..", "..", str(ws.parent), "/"):
        tools.blocked("delete_path", path=path)
    assert (ws / "hello.txt").exists()


def test_delete_removes_symlinks_not_their_targets(
    tools: Tools, ws: Path, outside: Path
) -> None:
    (ws / "out").symlink_to(outside)
    (ws / "tree").mkdir()
    (ws / "tree" / "out").symlink_to(outside)
    tools("delete_path", path="out")
    tools("delete_path", path="tree")
    assert (outside / "secret.txt").exists() and (outside / "sub" / "secret.txt").exists()
    assert not (ws / "out").is_symlink() and not (ws / "tree").exists()


# --- move_path, copy_path --------------------------------------------------------------------


def test_move_path(tools: Tools, ws: Path) -> None:
    tools("move_path", source="hello.txt", destination="moved/h.txt")
    assert (ws / "moved" / "h.txt").read_text() == "hello\nworld\n"
    assert not (ws / "hello.txt").exists()
    tools("move_path", source="src", destination="lib")
    assert (ws / "lib" / "main.py").exists()


def test_move_errors(tools: Tools, ws: Path) -> None:
    assert "already exists" in tools.failed(
        "move_path", source="hello.txt", destination="src/main.py").message
    assert (ws / "src" / "main.py").read_text() == "print('hi')\n"
    tools.failed("move_path", source="missing", destination="x")
    tools.failed("move_path", source="src", destination="src/inner")
    tools.blocked("move_path", source=".", destination="x")
    tools.blocked("move_path", source="hello.txt", destination="../h.txt")


def test_copy_path_file_and_tree(tools: Tools, ws: Path) -> None:
    (ws / "src" / "pkg").mkdir()
    (ws / "src" / "pkg" / "m.py").write_text("m\n")
    (ws / "src" / "link").symlink_to("pkg/m.py")
    os.chmod(ws / "src" / "main.py", 0o640)
    tools("copy_path", source="hello.txt", destination="copy.txt")
    assert (ws / "copy.txt").read_text() == "hello\nworld\n"
    out = tools("copy_path", source="src", destination="dst/src2")
    assert (ws / "dst" / "src2" / "pkg" / "m.py").read_text() == "m\n"
    assert os.readlink(ws / "dst" / "src2" / "link") == "pkg/m.py"
    assert os.stat(ws / "dst" / "src2" / "main.py").st_mode & 0o777 == 0o640
    assert out.raw["files"] == 2 and out.raw["symlinks"] == 1 and out.raw["dirs"] == 2


def test_copy_errors_leave_nothing_half_done(tools: Tools, ws: Path, outside: Path) -> None:
    tools.failed("copy_path", source="hello.txt", destination="src/main.py")
    tools.failed("copy_path", source="missing", destination="x")
    tools.failed("copy_path", source="src", destination="src/again")
    (ws / "tree").mkdir()
    (ws / "tree" / "a.txt").write_text("a")
    os.link(outside / "secret.txt", ws / "tree" / "z-hard")
    tools.blocked("copy_path", source="tree", destination="tree2")
    assert not (ws / "tree2").exists()
    assert [p.name for p in ws.iterdir() if ".acpd-" in p.name] == []
    os.mkfifo(ws / "fifo")
    tools.blocked("copy_path", source="fifo", destination="fifo2")


# --- allowed_paths ---------------------------------------------------------------------------


def test_allowed_paths_replace_the_session_roots(
    ws: Path, tmp_path: Path, resolver: ResolverKind
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("other\n")
    cfg = FileToolsConfig(resolver=resolver, allowed_paths=(str(ws / "src"), str(other)))
    tools = Tools(make_ctx(ws), cfg)
    assert tools("read", path="src/main.py").text == "print('hi')\n"
    assert tools("read", path=str(other / "o.txt")).text == "other\n"
    tools.blocked("read", path="hello.txt")
    tools.blocked("delete_path", path="src")
    tools.blocked("delete_path", path=str(other))
    tools("move_path", source=str(other / "o.txt"), destination="src/o.txt")
    assert (ws / "src" / "o.txt").read_text() == "other\n"
