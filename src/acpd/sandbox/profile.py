"""`Confinement`: exactly what the launcher needs to confine one command, as plain data.

Built fresh for every command (sandbox/build.py) from the workspace roots, the policy's path
rules and HOME; serialised to JSON for the editor-terminal path, where the editor runs acpd's
launcher (`python -m acpd.sandbox exec --profile FILE -- bash -c CMD`). All paths are real
(symlinks resolved) and absolute. Nothing here touches the file system.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

VERSION = 1


@dataclass(frozen=True, slots=True)
class Confinement:
    cwd: str
    roots: tuple[str, ...]
    """Workspace roots: writable."""
    write_paths: tuple[str, ...] = ()
    """Extra writable directories (the policy's `write_roots` that are real directories)."""
    pinned: tuple[str, ...] = ()
    """Writable directories bound onto themselves so they cannot be renamed or replaced
    (every git directory found: `mv .git x; git init` would bring fresh hooks; every
    directory between a root and a hooks directory or a hook's target kept read-only in it:
    `mv tools t2; mkdir -p tools/git/hooks`)."""
    git_read_only: tuple[str, ...] = ()
    """Git directories bound read-only whole (after the pins), when the rules say
    `git_writes = False`; `git_writable` entries of them are then bound back writable."""
    git_writable: tuple[str, ...] = ()
    """Directories inside `git_read_only` ones bound back writable (objects, refs, logs...)."""
    read_only: tuple[str, ...] = ()
    """Paths inside writable places made read-only: git hooks/config/info, hooks directories
    (`core.hooksPath`), the files hooks link to, configs git includes, `deny_write` matches."""
    stub_files: tuple[str, ...] = ()
    """Missing files that must not appear (a hook name in a hooks directory that is a work
    tree's top, a config git would include): /dev/null bound read-only there. The mount
    point, an empty file, is created (as bubblewrap creates every missing mount point)."""
    mask_files: tuple[str, ...] = ()
    """Files replaced by an empty, unreadable node (`deny_read` matches)."""
    mask_dirs: tuple[str, ...] = ()
    """Directories replaced by an empty read-only tmpfs (`deny_read` matches, socket dirs,
    a git directory's missing hooks/info)."""
    reexpose: tuple[str, ...] = ()
    """Read-only paths bound back inside a masked directory (DNS config when network is on)."""
    tool_dirs: tuple[str, ...] = ()
    """Host directories under /tmp holding programs on PATH (a virtual environment, a
    node_modules), bound back read-only over the private /tmp so those programs still run."""
    network: bool = False
    private_tmp: bool = True
    """/tmp is a fresh tmpfs for this command; TMPDIR points at it."""
    tmp_dir: str = ""
    """When set: a private host directory bound at /tmp instead of the fresh tmpfs (the
    daemon keeps one per workspace, so /tmp persists across a session's commands)."""
    complete: bool = True
    """False when the workspace walk hit its bound: some `deny_read` files may be unmasked."""
    notes: tuple[str, ...] = ()
    """What is not enforced and why (shown in the card and the audit)."""
    walked: int = 0
    """Entries the workspace walk looked at."""

    def to_json(self) -> str:
        data = asdict(self)
        data["version"] = VERSION
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Confinement:
        """Raises ValueError when the text is not a profile this version understands."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the sandbox profile is not JSON: {exc.msg}") from None
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError("the sandbox profile has an unknown version")
        return cls(**_checked(data))  # type: ignore[arg-type]  # each field checked there


_PATHS = ("roots", "write_paths", "pinned", "git_read_only", "git_writable", "read_only",
          "stub_files", "mask_files", "mask_dirs", "reexpose", "tool_dirs")
_FLAGS = ("network", "private_tmp", "complete")


def _checked(data: dict[str, object]) -> dict[str, object]:
    # `object`, not typing.Any: importing typing would cost the launcher ~10 ms per command.
    known = {f.name for f in fields(Confinement)}
    out: dict[str, object] = {k: v for k, v in data.items() if k in known}
    if not _is_path(out.get("cwd")):
        raise ValueError("the sandbox profile has no absolute cwd")
    for name in _PATHS:
        value = out.get(name, [])
        if not isinstance(value, list) or not all(_is_path(v) for v in value):
            raise ValueError(f"the sandbox profile's {name} is not a list of absolute paths")
        out[name] = tuple(value)
    if not out["roots"]:
        raise ValueError("the sandbox profile has no workspace root")
    if not all(isinstance(out.get(k, True), bool) for k in _FLAGS):
        raise ValueError("the sandbox profile has a non-boolean flag")
    tmp_dir = out.get("tmp_dir", "")
    if tmp_dir != "" and not _is_path(tmp_dir):
        raise ValueError("the sandbox profile's tmp_dir is not an absolute path")
    notes = out.get("notes", [])
    out["notes"] = tuple(str(n) for n in notes) if isinstance(notes, list) else ()
    if not isinstance(out.get("walked", 0), int):
        out["walked"] = 0
    return out


def _is_path(value: object) -> bool:
    return isinstance(value, str) and value.startswith("/") and "\x00" not in value
