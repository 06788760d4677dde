"""Editor routing: read/write/edit go through the editor's fs methods after the sandbox check."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpd.daemon.local import LocalFileSystem
from acpd.tools.fs import FileToolsConfig
from acpd.tools.spec import DiffItem
from tests.tools.conftest import ResolverKind, Tools, make_ctx


class FakeEditorFs:
    """An editor that serves reads and writes from its buffers (unsaved edits included)."""

    def __init__(self, reads: bool = True, writes: bool = True) -> None:
        self.buffers: dict[str, str] = {}
        self.calls: list[tuple[str, str]] = []
        self._reads, self._writes = reads, writes

    @property
    def serves_reads(self) -> bool:
        return self._reads

    @property
    def serves_writes(self) -> bool:
        return self._writes

    async def read_text(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        self.calls.append(("read", path))
        if path not in self.buffers:
            raise FileNotFoundError(2, "not open", path)
        lines = self.buffers[path].splitlines(keepends=True)
        start = (line or 1) - 1
        return "".join(lines[start : start + limit if limit else None])

    async def write_text(self, path: str, content: str) -> None:
        self.calls.append(("write", path))
        self.buffers[path] = content



@pytest.fixture
def editor(ws: Path) -> FakeEditorFs:
    fs = FakeEditorFs()
    fs.buffers[str(ws / "hello.txt")] = "unsaved\nbuffer\n"
    fs.buffers[str(ws / "src" / "main.py")] = "print('edited')\n"
    return fs


@pytest.fixture
def etools(ws: Path, editor: FakeEditorFs, resolver: ResolverKind) -> Tools:
    return Tools(make_ctx(ws, editor), FileToolsConfig(resolver=resolver, deny_read=(".env",)))


def test_local_file_system_serves_nothing_through_the_editor() -> None:
    assert not LocalFileSystem().serves_reads
    assert not LocalFileSystem().serves_writes


def test_read_goes_to_the_editor_with_the_vetted_real_path(
    etools: Tools, editor: FakeEditorFs, ws: Path
) -> None:
    (ws / "srclink").symlink_to("src")
    assert etools("read", path="hello.txt").text == "unsaved\nbuffer\n"
    assert etools("read", path="hello.txt", offset=2, limit=1).text == "buffer\n"
    out = etools("read", path="srclink/main.py")
    assert out.text == "print('edited')\n" and out.raw["source"] == "editor"
    assert editor.calls[-1] == ("read", str(ws / "src" / "main.py"))


def test_refused_paths_never_reach_the_editor(
    etools: Tools, editor: FakeEditorFs, ws: Path, outside: Path
) -> None:
    (ws / "out").symlink_to(outside)
    (ws / ".env").write_text("KEY=1\n")
    etools.blocked("read", path="out/secret.txt")
    etools.blocked("read", path="../outside/secret.txt")
    etools.blocked("read", path=".env")
    etools.blocked("write", path="out/x.txt", content="x")
    etools.blocked("edit", path="out/secret.txt", old_string="TOP", new_string="x")
    etools.failed("read", path="missing.txt")
    assert editor.calls == []


def test_write_goes_to_the_editor(etools: Tools, editor: FakeEditorFs, ws: Path) -> None:
    out = etools("write", path="hello.txt", content="new\n")
    assert editor.buffers[str(ws / "hello.txt")] == "new\n"
    assert (ws / "hello.txt").read_text() == "hello\nworld\n"  # the editor owns the write
    assert out.content == [DiffItem(str(ws / "hello.txt"), "unsaved\nbuffer\n", "new\n")]
    etools("write", path="pkg/new.py", content="x = 1\n")
    assert editor.calls[-1] == ("write", str(ws / "pkg" / "new.py"))
    assert (ws / "pkg").is_dir()


def test_edit_uses_the_editor_buffer(etools: Tools, editor: FakeEditorFs, ws: Path) -> None:
    out = etools("edit", path="hello.txt", old_string="buffer", new_string="text")
    assert editor.buffers[str(ws / "hello.txt")] == "unsaved\ntext\n"
    assert out.content == [DiffItem(str(ws / "hello.txt"), "unsaved\nbuffer\n", "unsaved\ntext\n")]
    etools.failed("edit", path="hello.txt", old_string="world", new_string="x")


def test_an_editor_without_fs_methods_means_local(ws: Path, resolver: ResolverKind) -> None:
    editor = FakeEditorFs(reads=False, writes=False)
    tools = Tools(make_ctx(ws, editor), FileToolsConfig(resolver=resolver))
    assert tools("read", path="hello.txt").raw["source"] == "disk"
    tools("edit", path="hello.txt", old_string="world", new_string="x")
    assert (ws / "hello.txt").read_text() == "hello\nx\n"
    assert editor.calls == []


def test_an_editor_refusal_keeps_its_reason() -> None:
    from acpd.tools.fs.errors import from_os_error

    # daemon/editor.py raises OSError("the editor refused: ...") with no errno.
    refused = from_os_error(OSError("the editor refused: file is not open"), "hello.txt")
    assert refused.message == "hello.txt: the editor refused: file is not open"
    missing = from_os_error(FileNotFoundError(2, "No such file or directory"), "b.txt")
    assert missing.message == "b.txt: No such file or directory"
    assert from_os_error(OSError(), "c.txt").message == "c.txt: OSError"
