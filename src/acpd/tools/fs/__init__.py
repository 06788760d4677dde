"""The file tools and their path sandbox.

Register with `ToolRegistry([*make_fs_specs(config), ...])`, or `FS_SPECS` for the defaults
(roots = the session's roots, no read policy).
"""

from __future__ import annotations

from acpd.tools.fs.config import FileToolsConfig
from acpd.tools.fs.sandbox import Sandbox
from acpd.tools.fs.specs import make_fs_specs

FS_SPECS = make_fs_specs()

__all__ = ["FS_SPECS", "FileToolsConfig", "Sandbox", "make_fs_specs"]
