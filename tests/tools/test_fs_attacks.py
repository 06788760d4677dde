"""Path attacks: each is refused with PolicyBlocked and nothing outside the workspace changes.

Every test runs with the openat2 resolver and with the component-walk fallback.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpd.tools.fs import FileToolsConfig
from acpd.tools.spec import DiffItem, TextItem
from tests.tools.conftest import SECRET, ResolverKind, Tools, make_ctx, snapshot


@pytest.fixture(autouse=True)
def untouched(tmp_path: Path, ws: Path, outside: Path) -> Iterator[None]:
    """Whatever the test does, the outside tree and tmp_path's top level stay as they were."""
    before = snapshot(outside)
    top = sorted(p.name for p in tmp_path.iterdir())
    yield
    assert snapshot(outside) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == top


def no_secret(*texts: str) -> None:
    for text in texts:
        assert "TOP SECRET" not in text


def test_dotdot(tools: Tools) -> None:
    for path in (
        "../outside/secret.txt", "src/../../outside/secret.txt", "./../outside/sub/../secret.txt"
    ):
        tools.blocked("read", path=path)
    tools.blocked("list_directory", path="..")
    tools.blocked("list_directory", path="src/../..")
    tools.blocked("write", path="../outside/new.txt", content="x")
    tools.blocked("write", path="src/../../outside/secret.txt", content="x")
    tools.blocked("edit", path="../outside/secret.txt", old_string="TOP", new_string="x")
    tools.blocked("create_directory", path="../outside/newdir")
    tools.blocked("delete_path", path="../outside")
    tools.blocked("delete_path", path="../outside/secret.txt")
    tools.blocked("move_path", source="hello.txt", destination="../outside/h.txt")
    tools.blocked("move_path", source="../outside/secret.txt", destination="s.txt")
    tools.blocked("copy_path", source="../outside/secret.txt", destination="s.txt")
    tools.blocked("copy_path", source="hello.txt", destination="../outside/h.txt")
    tools.blocked("grep", pattern="TOP", path="..")
    tools.blocked("find_path", path="..", pattern="**")


def test_absolute_paths_outside(tools: Tools, outside: Path) -> None:
    tools.blocked("read", path=str(outside / "secret.txt"))
    tools.blocked("read", path="/etc/passwd")
    tools.blocked("read", path="~/.bashrc")
    tools.blocked("write", path=str(outside / "new.txt"), content="x")
    tools.blocked("delete_path", path=str(outside))
    tools.blocked("copy_path", source=str(outside / "secret.txt"), destination="s.txt")
    tools.blocked("list_directory", path=str(outside))


@pytest.fixture
def links(ws: Path, outside: Path) -> Path:
    (ws / "out").symlink_to(outside)
    (ws / "rout").symlink_to("../outside")
    (ws / "s.txt").symlink_to(outside / "secret.txt")
    (ws / "rs.txt").symlink_to("../outside/secret.txt")
    (ws / "src" / "deep").symlink_to("../../outside/sub")
    return ws


@pytest.mark.parametrize("link", ["out", "rout"])
def test_symlink_out(tools: Tools, links: Path, link: str) -> None:
    tools.blocked("read", path=f"{link}/secret.txt")
    tools.blocked("read", path="s.txt")
    tools.blocked("read", path="rs.txt")
    tools.blocked("read", path="src/deep/secret.txt")
    tools.blocked("list_directory", path=link)
    tools.blocked("grep", pattern="TOP", path=link)
    tools.blocked("grep", pattern="TOP", path="s.txt")
    tools.blocked("find_path", path=link, pattern="*")
    tools.blocked("edit", path="s.txt", old_string="TOP", new_string="x")
    tools.blocked("write", path="s.txt", content="pwned")
    tools.blocked("write", path="rs.txt", content="pwned")
    tools.blocked("copy_path", source=f"{link}/secret.txt", destination="c.txt")
    # The walkers list the links but never enter them.
    no_secret(tools("grep", pattern="TOP").text)
    assert tools("find_path", path=".", pattern="**/secret.txt").raw["matches"] == 0


@pytest.mark.parametrize("link", ["out", "rout", "src/deep"])
def test_symlinked_parent(tools: Tools, links: Path, link: str) -> None:
    tools.blocked("write", path=f"{link}/new.txt", content="x")
    tools.blocked("write", path=f"{link}/secret.txt", content="x")
    tools.blocked("create_directory", path=f"{link}/newdir")
    tools.blocked("create_directory", path=f"{link}/a/b")
    tools.blocked("delete_path", path=f"{link}/secret.txt")
    tools.blocked("move_path", source=f"{link}/secret.txt", destination="stolen.txt")
    tools.blocked("move_path", source="hello.txt", destination=f"{link}/h.txt")
    tools.blocked("copy_path", source="hello.txt", destination=f"{link}/h.txt")
    tools.blocked("edit", path=f"{link}/secret.txt", old_string="TOP", new_string="x")


def test_symlink_loop(tools: Tools, ws: Path) -> None:
    (ws / "loop1").symlink_to("loop2")
    (ws / "loop2").symlink_to("loop1")
    (ws / "self").symlink_to("self/x")
    (ws / "cycle").symlink_to(".")
    for path in ("loop1", "loop2/x", "self", "self/x"):
        tools.blocked("read", path=path)
    tools.blocked("write", path="loop1", content="x")
    tools.blocked("write", path="loop1/x", content="x")
    tools.blocked("create_directory", path="loop1/x")
    tools.blocked("list_directory", path="loop1")
    # A link to "." is followed beneath the root, but the walkers do not spin on it.
    assert tools("read", path="cycle/cycle/cycle/hello.txt").text == "hello\nworld\n"
    assert "cycle/" not in tools("find_path", path=".", pattern="**/hello.txt").text


def test_dangling_symlink_with_create(tools: Tools, ws: Path, outside: Path) -> None:
    (ws / "dangle").symlink_to(outside / "created.txt")
    (ws / "rdangle").symlink_to("../outside/created.txt")
    (ws / "ddir").symlink_to(outside / "newdir")
    for path in ("dangle", "rdangle"):
        tools.blocked("write", path=path, content="pwned")
        tools.blocked("edit", path=path, old_string="a", new_string="b")
        tools.blocked("copy_path", source="hello.txt", destination=f"{path}/x")
    tools.blocked("create_directory", path="ddir")
    tools.blocked("create_directory", path="ddir/sub")
    tools.blocked("write", path="ddir/f.txt", content="x")
    assert not (outside / "created.txt").exists() and not (outside / "newdir").exists()
    # copy/move never follow the final link: the destination exists (as a link), so they fail.
    tools.failed("copy_path", source="hello.txt", destination="dangle")
    tools.failed("move_path", source="hello.txt", destination="dangle")


def test_proc_self_root(tools: Tools, ws: Path) -> None:
    depth = len(ws.parts) - 1
    (ws / "proc").symlink_to("/proc/self/root")
    (ws / "rproc").symlink_to("../" * depth + "proc/self/root")
    (ws / "fd").symlink_to("/proc/self/cwd")
    for path in ("/proc/self/root/etc/passwd", "proc/etc/passwd", "rproc/etc/passwd",
                 "fd/etc/passwd", "/proc/self/cwd/etc/passwd"):
        tools.blocked("read", path=path)
    tools.blocked("write", path="proc/tmp/acpd-pwned", content="x")
    tools.blocked("write", path="rproc/tmp/acpd-pwned", content="x")
    assert not Path("/tmp/acpd-pwned").exists()


def test_hard_link_to_an_outside_file(tools: Tools, ws: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", ws / "hard.txt")
    os.link(outside / "sub" / "secret.txt", ws / "src" / "hard2.txt")
    tools.blocked("read", path="hard.txt")
    tools.blocked("edit", path="hard.txt", old_string="TOP", new_string="x")
    tools.blocked("write", path="hard.txt", content="pwned")
    tools.blocked("copy_path", source="hard.txt", destination="c.txt")
    tools.blocked("copy_path", source="src", destination="src2")
    out = tools("grep", pattern="TOP")
    no_secret(out.text)
    assert "hard-linked files" in out.text


def test_trailing_slash(tools: Tools, links: Path) -> None:
    for path in ("out/", "rout/", "s.txt/", "out/sub/", "src/deep/"):
        tools.blocked("read", path=path)
        tools.blocked("list_directory", path=path)
        tools.blocked("write", path=path, content="x")
    for path in ("out/", "rout/", "src/deep/"):
        tools.blocked("delete_path", path=path)
        tools.blocked("move_path", source=path, destination="moved")
        tools.blocked("copy_path", source=path, destination="copied")
        tools.blocked("create_directory", path=f"{path}x/")
    tools.failed("read", path="hello.txt/")
    assert (links / "out").is_symlink() and (links / "rout").is_symlink()


@pytest.mark.timeout(60)
def test_fifo_and_devices_are_refused_without_blocking(tools: Tools, ws: Path) -> None:
    os.mkfifo(ws / "fifo")
    (ws / "fifolink").symlink_to("fifo")
    os.mknod(ws / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    for path in ("fifo", "fifolink", "null"):
        tools.blocked("read", path=path)
        tools.blocked("edit", path=path, old_string="a", new_string="b")
        tools.blocked("write", path=path, content="x")
        tools.blocked("grep", pattern="x", path=path)
    for path in ("fifo", "null"):
        tools.blocked("copy_path", source=path, destination=f"{path}.copy")
    # A symlink is copied as a symlink; reading through the copy is refused the same way.
    tools("copy_path", source="fifolink", destination="fifolink2")
    assert os.readlink(ws / "fifolink2") == "fifo"
    tools.blocked("read", path="fifolink2")
    assert "fifo" not in tools("grep", pattern="x").text
    assert stat.S_ISFIFO(os.lstat(ws / "fifo").st_mode)


def test_double_slash(tools: Tools, ws: Path) -> None:
    escape = "//" + str(ws.parent) + "/outside/secret.txt"
    for path in ("//etc/passwd", "///etc/passwd", "//etc/shadow", escape):
        tools.blocked("read", path=path)
    tools.blocked("write", path="//tmp/acpd-pwned", content="x")
    tools.blocked("delete_path", path="//" + str(ws.parent / "outside"))
    # A double slash in front of a path that is inside still reads it.
    assert tools("read", path="/" + str(ws / "hello.txt")).text == "hello\nworld\n"
    assert tools("read", path="src//main.py").text == "print('hi')\n"


def test_dotenv_case_variants_under_deny_read(ws: Path, resolver: ResolverKind) -> None:
    cfg = FileToolsConfig(resolver=resolver, deny_read=("**/.env",))
    tools = Tools(make_ctx(ws), cfg)
    names = [".env", ".ENV", ".Env", "src/.eNv"]
    for name in names:
        (ws / name).write_text(f"API_KEY={SECRET}")
    (ws / "alias").symlink_to(".ENV")
    (ws / ".env.example").write_text("API_KEY=\n")
    for name in [*names, "alias", str(ws / ".Env")]:
        err = tools.blocked("read", path=name)
        assert "deny_read" in err.message
        tools.blocked("edit", path=name, old_string="API", new_string="X")
    for name in names:
        tools.blocked("copy_path", source=name, destination="leak.txt")
        tools.blocked("move_path", source=name, destination="leak.txt")
    # Moving or copying the link moves the link: the real path behind it is still denied.
    tools("copy_path", source="alias", destination="alias2")
    tools("move_path", source="alias2", destination="alias3")
    tools.blocked("read", path="alias3")
    tools.blocked("move_path", source="src", destination="src2")
    out = tools("grep", pattern="API_KEY")
    no_secret(out.text)
    assert ".env.example:1: API_KEY=" in out.text
    assert "refused by the read policy" in out.text
    assert tools("read", path=".env.example").text == "API_KEY=\n"
    # Writing is not reading: a denied file may be replaced, but its old text is not shown.
    written = tools("write", path=".ENV", content="API_KEY=new\n")
    diff, note = written.content
    assert isinstance(diff, DiffItem) and diff.old_text is not None
    assert "API_KEY" not in diff.old_text and diff.new_text == "API_KEY=new\n"
    assert isinstance(note, TextItem) and "not shown" in note.text and "API_KEY" not in note.text
    assert not (ws / "leak.txt").exists()
