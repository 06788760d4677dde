"""A loaded machine on demand: processes that only burn CPU, for tests of behaviour that must
not depend on how fast the machine is (they assert outcomes, never durations)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

BURN = "while True: pass"


@contextmanager
def cpu_burners(per_core: int = 2) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`per_core` busy processes for each core, killed (by pid) when the block ends."""
    count = per_core * (os.cpu_count() or 1)
    burners = [
        subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield burners
    finally:
        for proc in burners:
            proc.kill()
        for proc in burners:
            proc.wait()
