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
    """`per_core` busy processes for each core, killed (by pid) when the block ends.

    They run at the lowest priority (nice 19): the suite runs in parallel, and burners at
    normal priority slowed every other worker's tests past their hang guards. A test that
    wants its daemon loaded runs it at the same priority (`lowest_priority(pid)`), so the
    burners compete with it and not with the rest of the suite."""
    count = per_core * (os.cpu_count() or 1)
    burners = [
        subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", BURN],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield burners
    finally:
        for proc in burners:
            proc.kill()
        for proc in burners:
            proc.wait()


def lowest_priority(pid: int) -> None:
    """Nice 19 for `pid` (its threads started from now on inherit it)."""
    os.setpriority(os.PRIO_PROCESS, pid, 19)
