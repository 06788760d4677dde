"""Content-addressed file bytes: `objects/ab/cdef...`, named by a BLAKE2b digest.

A blob is written once (temp file, then rename) and never changed, so the same bytes in
many files, many calls or many checkpoints cost one copy: the objects under `.git` are
immutable and are saved once. Blobs are stored as they are (git's own objects are already
compressed). `total` counts the bytes stored; a blob that would pass `max_total` is not
written and `put` says so, so the caller can note that it could not be saved.

Blobs are not fsynced one by one (a first checkpoint of 10,000 files would take seconds):
they survive a crash of the daemon, not necessarily a power cut in the next seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import os

DIGEST_SIZE = 20


def digest_of(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE).hexdigest()


class BlobStore:
    def __init__(self, directory: str, max_total: int, total: int = 0) -> None:
        self.directory = directory
        self.max_total = max_total
        self.total = total
        self.added: list[tuple[str, int]] = []
        """Blobs written since the owner last took this list (to record their sizes)."""
        os.makedirs(directory, mode=0o700, exist_ok=True)

    def path(self, digest: str) -> str:
        return os.path.join(self.directory, digest[:2], digest[2:])

    def has(self, digest: str) -> bool:
        return os.path.exists(self.path(digest))

    def put(self, data: bytes) -> str | None:
        """Store `data`; its digest, or None when the total cap leaves no room. Raises
        OSError when the store cannot be written."""
        digest = digest_of(data)
        path = self.path(digest)
        if os.path.exists(path):
            return digest
        if self.total + len(data) > self.max_total:
            return None
        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        temp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb", closefd=False) as out:
                out.write(data)
        finally:
            os.close(fd)
        os.replace(temp, path)
        self.total += len(data)
        self.added.append((digest, len(data)))
        return digest

    def get(self, digest: str) -> bytes:
        """The bytes of a blob. Raises OSError when it is missing; ValueError when what is
        stored does not match its name (a damaged store must not be restored from)."""
        with open(self.path(digest), "rb") as f:
            data = f.read()
        if digest_of(data) != digest:
            raise ValueError(f"checkpoint blob {digest} is damaged")
        return data

    def remove(self, digest: str, size: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(digest))
            self.total = max(0, self.total - size)

    def take_added(self) -> list[tuple[str, int]]:
        added, self.added = self.added, []
        return added
