"""A plugin tool's manifest: `<plugin folder>/tool.toml` (zigclaw's format, a few keys more).

    tool_name = "echo"            # ^[a-z][a-z0-9_-]{0,47}$; the tool's id is plugin__<name>
    version = "0.1.0"
    description = "Echo back a text field"
    requires_network = false
    native = false                # false: a WASI module run in-process with wasmtime
    entry = "echo.wasm"           # in the folder; default <tool_name>.wasm, or <tool_name>
    max_runtime_ms = 2000         # 1 .. 600000
    max_stdout_bytes = 65536      # 1 .. 16 MiB
    max_stderr_bytes = 65536
    [[mounts]]                    # WASI: preopened dirs; native: writable ones are write roots
    host = "data"                 # relative to the folder, or "{workspace}[/sub]"
    guest = "/data"
    read_only = true              # the default
    [args]                        # the schema subset: object of string|integer|number|boolean
    type = "object"
    required = ["text"]
    [args.properties.text]
    type = "string"
    max_length = 1024             # also min_length, enum; min and max for numbers

Rules: unknown keys anywhere are refused (a misspelt `max_runtime` must not silently mean "no
limit"); the manifest is read with the checks the policy overlays get (a real file, owned by
you or root, not writable by group or others, at most MAX_MANIFEST_BYTES); the entry must be a
regular file inside the folder after symlinks are resolved. Every problem is a ManifestError
whose message starts with the manifest's path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from acpd.readcap import read_upto
from acpd.tools.plugins.files import MANIFEST, ManifestError, check_owned

__all__ = ["MANIFEST", "ManifestError", "PluginTool", "ToolManifest", "load_tool"]

MAX_MANIFEST_BYTES = 64 * 1024
MAX_ARGS = 64
TOOL_NAME = r"^[a-z][a-z0-9_-]{0,47}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArgSpec(_Strict):
    type: Literal["string", "integer", "number", "boolean"]
    description: str = Field("", max_length=1000)
    max_length: int | None = Field(None, ge=0, le=1 << 20)
    min_length: int | None = Field(None, ge=0, le=1 << 20)
    enum: list[str | int | float] | None = Field(None, min_length=1, max_length=256)
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _fits_type(self) -> ArgSpec:
        text = self.type == "string"
        if not text and (self.max_length is not None or self.min_length is not None):
            raise ValueError("max_length/min_length apply to strings only")
        if self.type not in ("integer", "number") and (self.min is not None
                                                        or self.max is not None):
            raise ValueError("min/max apply to integer and number only")
        if self.enum is not None and text and not all(isinstance(v, str) for v in self.enum):
            raise ValueError("a string's enum must list strings")
        return self


class ArgsSchema(_Strict):
    type: Literal["object"] = "object"
    required: list[str] = Field(default_factory=list)
    properties: dict[str, ArgSpec] = Field(default_factory=dict, max_length=MAX_ARGS)

    @model_validator(mode="after")
    def _required_known(self) -> ArgsSchema:
        unknown = [name for name in self.required if name not in self.properties]
        if unknown:
            raise ValueError(f"required names undeclared properties: {', '.join(unknown)}")
        bad = [n for n in self.properties if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", n)]
        if bad:
            raise ValueError(f"property names must be identifiers: {', '.join(bad)}")
        return self


class Mount(_Strict):
    host: str = Field(min_length=1, max_length=4096)
    guest: str = Field(pattern=r"^/[A-Za-z0-9._/-]{0,255}$")
    read_only: bool = True


class ToolManifest(_Strict):
    tool_name: str = Field(pattern=TOOL_NAME)
    version: str = Field(min_length=1, max_length=64)
    description: str = Field(min_length=1, max_length=2000)
    requires_network: bool = False
    native: bool = False
    entry: str | None = Field(None, min_length=1, max_length=255)
    max_runtime_ms: int = Field(10_000, ge=1, le=600_000)
    max_stdout_bytes: int = Field(1 << 20, ge=1, le=16 << 20)
    max_stderr_bytes: int = Field(64 << 10, ge=0, le=16 << 20)
    mounts: list[Mount] = Field(default_factory=list, max_length=16)
    args: ArgsSchema = Field(default_factory=ArgsSchema)


@dataclass(frozen=True, slots=True)
class PluginTool:
    """A loaded manifest: where it lives and the pydantic model of its arguments."""

    manifest: ToolManifest
    folder: str
    path: str
    """The manifest file."""
    entry: str
    """The real path of the executable or the .wasm module."""
    params: type[BaseModel]

    @property
    def name(self) -> str:
        return self.manifest.tool_name

    @property
    def writable_mounts(self) -> tuple[Mount, ...]:
        return tuple(m for m in self.manifest.mounts if not m.read_only)


def _read(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as handle:
        check_owned(path, os.fstat(handle.fileno()), "file")
        data = read_upto(handle, MAX_MANIFEST_BYTES)
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{path}: over the {MAX_MANIFEST_BYTES} byte cap")
    return data


def parse_manifest(path: Path, data: bytes) -> ToolManifest:
    import tomllib

    try:
        raw: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path}: not valid TOML ({exc})") from None
    try:
        return ToolManifest.model_validate(raw)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(x) for x in p['loc']) or '(top)'}: "
                    f"{'unknown key' if p['type'] == 'extra_forbidden' else p['msg']}"
                    for p in exc.errors(include_url=False, include_input=False)[:5]]
        raise ManifestError(f"{path}: {'; '.join(problems)}") from None


def load_tool(folder: Path) -> PluginTool:
    """Read and check `folder/tool.toml` and its entry. Raises ManifestError."""
    try:
        check_owned(folder, folder.lstat(), "directory")
    except OSError as exc:
        raise ManifestError(f"{folder}: {exc.strerror or exc}") from None
    path = folder / MANIFEST
    manifest = parse_manifest(path, _read(path))
    entry_name = manifest.entry or (manifest.tool_name if manifest.native
                                    else f"{manifest.tool_name}.wasm")
    entry = _entry(folder, entry_name, path, manifest.native)
    return PluginTool(manifest, str(folder), str(path), entry, args_model(manifest))


def _entry(folder: Path, name: str, manifest: Path, native: bool) -> str:
    base = os.path.realpath(folder)
    real = os.path.realpath(folder / name)
    if not real.startswith(base.rstrip("/") + "/"):
        raise ManifestError(f"{manifest}: entry {name!r} is outside the plugin folder")
    try:
        st = os.stat(real)
    except OSError as exc:
        raise ManifestError(f"{manifest}: entry {name!r}: {exc.strerror or exc}") from None
    check_owned(Path(real), st, "file")
    if native and not st.st_mode & 0o100:
        raise ManifestError(f"{manifest}: entry {name!r} is not executable (chmod u+x)")
    return real


def args_model(manifest: ToolManifest) -> type[BaseModel]:
    """The pydantic model the pipeline validates arguments with (unknown keys refused)."""
    fields: dict[str, Any] = {}
    for name, spec in manifest.args.properties.items():
        kind = _python_type(spec)
        required = name in manifest.args.required
        constraints: dict[str, Any] = {"description": spec.description or None}
        if spec.type == "string":
            constraints.update(max_length=spec.max_length, min_length=spec.min_length)
        if spec.type in ("integer", "number"):
            constraints.update(ge=spec.min, le=spec.max)
        field = Field(... if required else None, **constraints)
        fields[name] = (kind if required else kind | None, field)
    model_name = "Args_" + re.sub(r"\W", "_", manifest.tool_name)
    model: type[BaseModel] = create_model(
        model_name, __config__=ConfigDict(extra="forbid", strict=True), **fields)
    return model


def _python_type(spec: ArgSpec) -> Any:
    if spec.enum is not None:
        return Literal[tuple(spec.enum)]
    return {"string": str, "integer": int, "number": float, "boolean": bool}[spec.type]
