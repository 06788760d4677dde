"""Whether a file operation goes to the editor (`fs/read_text_file`, `fs/write_text_file`).

The sandbox vets every path first either way; the editor then gets the vetted real path.
"""

from __future__ import annotations

from acpd.tools.capabilities import FileSystem


def editor_reads(fs: FileSystem) -> bool:
    return fs.serves_reads


def editor_writes(fs: FileSystem) -> bool:
    return fs.serves_writes
