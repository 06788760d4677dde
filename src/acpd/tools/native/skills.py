"""load_skill: the body of a SKILL.md, fetched on demand.

A skill is a folder `<root>/<name>/SKILL.md` that opens with YAML frontmatter:

    ---
    name: release-notes            # required: lowercase letters, digits, hyphens; = the folder
    description: How we write...   # required: one line or more, at most 1024 characters
    ---
    The body: what the model reads when it loads the skill.

Roots, searched in this order (the first skill of a name wins, so a workspace cannot shadow
a skill the user installed): `[tools.native.skills] dirs`, the user's `<config dir>/acpd/skills`,
then the session workspace's `.acpd/skills/` (looked up at each call).

Rules and limits:
  - frontmatter is parsed with yaml.safe_load, at most MAX_FRONTMATTER bytes, and validated:
    a mapping with `name` and `description` strings; a broken skill is never loaded and the
    error says which file and what is wrong;
  - a SKILL.md is read only when it is a regular file with one link, at most MAX_SKILL_BYTES,
    whose real path is inside its root's real path, opened beneath the root (openat2
    RESOLVE_BENEATH, so a folder swapped for a symlink after the check does not lead out): a
    symlink or a hard link cannot make load_skill read a file outside the skills folder;
  - at most MAX_SKILLS folders a root are looked at.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from acpd.readcap import read_upto
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.native.config import SkillsConfig
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

log = logging.getLogger("acpd.tools.skills")

SKILL_FILE = "SKILL.md"
WORKSPACE_SKILLS = (".acpd", "skills")
MAX_SKILL_BYTES = 256 * 1024
MAX_FRONTMATTER = 16 * 1024
MAX_SKILLS = 200
MAX_DESCRIPTION = 1024
LISTED = 50
"""Skill names listed in the tool's description, at most (the rest are found by name)."""
NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")


class SkillError(ValueError):
    """A SKILL.md that cannot be used; the message names the file and the fault."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    path: str


def parse_skill(text: str, path: str, folder: str) -> Skill:
    """The skill in `text` (a SKILL.md's content). Raises SkillError saying what is wrong."""
    import yaml

    if not text.startswith("---"):
        raise SkillError(f"{path}: no frontmatter (the file must open with a '---' line)")
    lines = text.split("\n")
    if lines[0].strip() != "---":
        raise SkillError(f"{path}: the first line must be '---' alone")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        raise SkillError(f"{path}: the frontmatter is not closed (no second '---' line)")
    head = "\n".join(lines[1:end])
    if len(head.encode("utf-8", "surrogatepass")) > MAX_FRONTMATTER:
        raise SkillError(f"{path}: the frontmatter is larger than {MAX_FRONTMATTER} bytes")
    try:
        meta: Any = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 2})" if where is not None else ""
        raise SkillError(f"{path}: the frontmatter is not valid YAML{at}") from None
    return Skill(*_check_meta(meta, path, folder), "\n".join(lines[end + 1 :]).strip(), path)


def _check_meta(meta: Any, path: str, folder: str) -> tuple[str, str]:
    if not isinstance(meta, dict):
        raise SkillError(f"{path}: the frontmatter must be a mapping with name and description")
    missing = [key for key in ("name", "description") if key not in meta]
    if missing:
        raise SkillError(f"{path}: the frontmatter lacks {' and '.join(missing)} (required)")
    name, description = meta["name"], meta["description"]
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SkillError(
            f"{path}: name must be 1-64 lowercase letters, digits and inner hyphens "
            f"(got {str(name)[:80]!r})"
        )
    if name != folder:
        raise SkillError(f"{path}: name {name!r} differs from its folder {folder!r}")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{path}: description must be a non-empty string")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"{path}: description is longer than {MAX_DESCRIPTION} characters")
    return name, " ".join(description.split())


def read_skill_file(root: Path, folder: str) -> str:
    """The text of `<root>/<folder>/SKILL.md`, refusing anything that would read outside
    `root` (a symlink out, a hard link, a non-regular file) or too much. Raises SkillError;
    FileNotFoundError when there is no such skill."""
    real_root = os.path.realpath(root)
    candidate = os.path.join(real_root, folder, SKILL_FILE)
    real = os.path.realpath(candidate)
    if os.path.commonpath([real_root, real]) != real_root:
        raise SkillError(f"{candidate}: resolves outside {real_root}; not read")
    fd = _open_beneath(real_root, os.path.relpath(real, real_root), candidate)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SkillError(f"{candidate}: not a regular file")
        if info.st_nlink != 1:
            raise SkillError(f"{candidate}: has {info.st_nlink} hard links; not read")
        data = read_upto(handle, MAX_SKILL_BYTES)
    if len(data) > MAX_SKILL_BYTES:
        raise SkillError(f"{candidate}: larger than {MAX_SKILL_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{candidate}: not UTF-8 text") from None


def _open_beneath(real_root: str, rel: str, shown: str) -> int:
    """Open `rel` under `real_root` for reading, never outside it even if a folder on the way
    is swapped for a symlink after the check above: openat2 with RESOLVE_BENEATH where the
    kernel has it, else O_NOFOLLOW and a look at where the descriptor really points."""
    from acpd.tools.fs.syscalls import (
        RESOLVE_BENEATH,
        RESOLVE_NO_MAGICLINKS,
        openat2,
        openat2_available,
    )

    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    if openat2_available():
        root_fd = os.open(real_root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return openat2(root_fd, rel, flags, resolve=RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise SkillError(f"{shown}: resolves outside {real_root}; not read") from None
            raise
        finally:
            os.close(root_fd)
    fd = os.open(os.path.join(real_root, rel), flags)
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        opened = os.path.join(real_root, rel)  # no /proc: the realpath check stands alone
    if os.path.commonpath([real_root, opened]) != real_root:
        os.close(fd)
        raise SkillError(f"{shown}: resolves outside {real_root}; not read")
    return fd


def load_from(root: Path, folder: str) -> Skill | None:
    """The skill `folder` of `root`; None when it has none. Raises SkillError."""
    try:
        text = read_skill_file(root, folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):  # not a folder / a symlink swapped in
            raise SkillError(f"{root / folder / SKILL_FILE}: not a plain file") from None
        raise SkillError(f"{root / folder / SKILL_FILE}: {exc.strerror or exc}") from None
    return parse_skill(text, str(root / folder / SKILL_FILE), folder)


def folders(root: Path) -> list[str]:
    """The candidate skill folders of `root` (sorted, at most MAX_SKILLS); [] when unreadable."""
    try:
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries if NAME.fullmatch(e.name))
    except OSError:
        return []
    return names[:MAX_SKILLS]


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    """The skill roots: fixed ones (config, user) and the workspace's, found per call."""

    roots: tuple[Path, ...]
    settings: SkillsConfig

    def roots_for(self, cwd: str) -> list[Path]:
        """The fixed roots, then the workspace's when it is inside the workspace (a
        `.acpd/skills` symlinked elsewhere is not followed out of the repository)."""
        if not (self.settings.workspace_dir and cwd):
            return list(self.roots)
        local = Path(cwd, *WORKSPACE_SKILLS)
        inside = os.path.realpath(cwd)
        if os.path.commonpath([inside, os.path.realpath(local)]) != inside:
            log.warning("%s leads outside the workspace; its skills are not used", local)
            return list(self.roots)
        return [*self.roots, local]

    def scan(self, cwd: str = "") -> tuple[dict[str, Skill], list[str]]:
        """Every valid skill by name (the first root wins) and the errors of the others."""
        found: dict[str, Skill] = {}
        errors: list[str] = []
        for root in self.roots_for(cwd):
            for folder in folders(root):
                if folder in found:
                    continue
                try:
                    skill = load_from(root, folder)
                except SkillError as exc:
                    errors.append(str(exc))
                    continue
                if skill is not None:
                    found[folder] = skill
        return found, errors

    def find(self, name: str, cwd: str) -> Skill | None:
        """The skill `name` from the first root that has one. Raises SkillError for a broken
        one (a later root's skill of that name is not used instead: the user must see it)."""
        for root in self.roots_for(cwd):
            skill = load_from(root, name)
            if skill is not None:
                return skill
        return None


def skill_roots(settings: SkillsConfig, user_config_dir: Path | None) -> tuple[Path, ...]:
    roots = [Path(os.path.expanduser(d)) for d in settings.dirs]
    if settings.user_dir and user_config_dir is not None:
        roots.append(user_config_dir / "skills")
    return tuple(roots)


class LoadSkillParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, description="The skill's name")


def describe(catalog: SkillCatalog) -> str:
    """The tool's description: what it does and the skills known when acpd started."""
    found, errors = catalog.scan()
    for error in errors:
        log.warning("skill not loaded: %s", error)
    head = "Load a skill: its full SKILL.md instructions, to follow for the task at hand."
    names = sorted(found)
    listed = "; ".join(f"{n}: {found[n].description[:120]}" for n in names[:LISTED])
    more = f" (and {len(names) - LISTED} more)" if len(names) > LISTED else ""
    known = f" Skills: {listed}{more}." if names else " No skills are installed."
    return head + known + " Skills in the workspace's .acpd/skills/ can be loaded too."


def make_skill_spec(catalog: SkillCatalog) -> ToolSpec:
    async def load_skill(args: LoadSkillParams, ctx: ToolContext) -> ToolOutput:
        import anyio.to_thread

        if not NAME.fullmatch(args.name):
            raise ToolError(ErrorCategory.INVALID_PARAMETERS,
                            "name: lowercase letters, digits and inner hyphens only")
        try:
            skill = await anyio.to_thread.run_sync(catalog.find, args.name, ctx.cwd)
        except SkillError as exc:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE, f"skill not loaded: {exc}",
                            suggestion="Tell the user the skill file needs fixing.") from None
        if skill is None:
            found, _ = await anyio.to_thread.run_sync(catalog.scan, ctx.cwd)
            known = ", ".join(sorted(found)[:LISTED]) or "none"
            raise ToolError(ErrorCategory.INVALID_PARAMETERS,
                            f"no skill named {args.name!r}; the skills are: {known}")
        text = f"# Skill: {skill.name}\n{skill.description}\n\n{skill.body}"
        return ToolOutput(text, raw={"name": skill.name, "path": skill.path})

    return ToolSpec(
        id="core__load_skill", name="load_skill", description=describe(catalog),
        params=LoadSkillParams, effect=Effect.READ_ONLY, kind="read", execute=load_skill,
        title=lambda a: f"Load skill {a.name}", redaction=redaction(("name",), ("name", "path")),
    )
