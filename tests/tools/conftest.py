from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import pytest

from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
from acpd.tools.capabilities import FileSystem
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.fs import FileToolsConfig, make_fs_specs
from acpd.tools.fs.syscalls import openat2_available
from acpd.tools.spec import ContentItem, ToolContext, ToolOutput

ResolverKind = Literal["openat2", "walk"]
RESOLVERS: list[ResolverKind] = ["openat2", "walk"]
SECRET = "TOP SECRET outside content\n"


async def _publish(_content: list[ContentItem]) -> None:
    return None


def _defer(_cleanup: Callable[[], Awaitable[None]]) -> None:
    return None


def make_ctx(cwd: Path, fs: FileSystem | None = None, roots: tuple[str, ...] = ()) -> ToolContext:
    return ToolContext(
        "call-1", str(cwd), roots or (str(cwd),), fs or LocalFileSystem(), LocalCommandRunner(),
        _publish, _defer,
    )


class Tools:
    """Calls the file tools' executors directly, as the pipeline would after validation."""

    def __init__(self, ctx: ToolContext, cfg: FileToolsConfig) -> None:
        self.ctx, self.cfg = ctx, cfg
        self.specs = {spec.name: spec for spec in make_fs_specs(cfg)}

    def __call__(self, name: str, **args: Any) -> ToolOutput:
        spec = self.specs[name]
        parsed = spec.params.model_validate(args)
        result: ToolOutput = anyio.run(spec.execute, parsed, self.ctx)
        return result

    def error(self, name: str, **args: Any) -> ToolError:
        with pytest.raises(ToolError) as info:
            self(name, **args)
        return info.value

    def blocked(self, name: str, **args: Any) -> ToolError:
        err = self.error(name, **args)
        assert err.category is ErrorCategory.POLICY_BLOCKED, err.format_for_model()
        return err

    def failed(self, name: str, **args: Any) -> ToolError:
        err = self.error(name, **args)
        assert err.category is ErrorCategory.PERMANENT_FAILURE, err.format_for_model()
        return err


@pytest.fixture(params=RESOLVERS)
def resolver(request: pytest.FixtureRequest) -> ResolverKind:
    kind = cast(ResolverKind, request.param)
    if kind == "openat2" and not openat2_available():
        pytest.skip("openat2 is not available on this kernel")
    return kind


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "hello.txt").write_text("hello\nworld\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text(SECRET)
    (path / "sub").mkdir()
    (path / "sub" / "secret.txt").write_text(SECRET)
    return path


def snapshot(path: Path) -> dict[str, tuple[int, int, bytes | str]]:
    """Everything under `path`: mode, mtime and content (or link target) of each entry."""
    seen: dict[str, tuple[int, int, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if os.path.islink(full):
                body: bytes | str = os.readlink(full)
            elif os.path.isfile(full):
                body = Path(full).read_bytes()
            else:
                body = b""
            seen[os.path.relpath(full, path)] = (st.st_mode, st.st_mtime_ns, body)
    return seen


@pytest.fixture
def tools(ws: Path, resolver: ResolverKind) -> Tools:
    return Tools(make_ctx(ws), FileToolsConfig(resolver=resolver))
