"""A pipelined burst well past the in-flight limit, sent while the machine is loaded and read
by a peer that pauses for longer than `slot_wait` (daemon/rpc.py): every request is answered
with its result, none refused. Outcomes only, no durations: the waits below only bound a hang.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from acpd.daemon.rpc import MAX_IN_FLIGHT, SLOT_WAIT
from tests.helpers.daemon import RawPeer, raw_daemon
from tests.helpers.load import cpu_burners, lowest_priority

HANG = 240.0
"""Seconds without a single message before the test calls it a hang (start-up on a machine
loaded many times over has taken 30 s)."""


def request(msg_id: int, method: str, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method,
                       "params": params}).encode() + b"\n"


class SlowReader:
    """Reads the daemon's stdout on a thread only when the test asks, so that the daemon's
    output backs up into the pipe and its outbox while the test pauses."""

    def __init__(self, raw: RawPeer) -> None:
        self._wanted: queue.Queue[int] = queue.Queue()
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, args=(raw,), daemon=True).start()

    def _pump(self, raw: RawPeer) -> None:
        assert raw.proc.stdout is not None
        while (count := self._wanted.get()) > 0:
            for _ in range(count):
                line = raw.proc.stdout.readline()
                self._lines.put(line)
                if not line:
                    return

    def read(self, count: int) -> list[dict[str, Any]]:
        self._wanted.put(count)
        answers = []
        for _ in range(count):
            try:
                line = self._lines.get(timeout=HANG)
            except queue.Empty:
                raise AssertionError(f"no message within {HANG:g} s") from None
            assert line, "the daemon closed stdout"
            answers.append(json.loads(line))
        return answers

    def stop(self) -> None:
        self._wanted.put(0)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_slow_reader_of_a_pipelined_burst_is_served_on_a_loaded_machine(
    data_dir: Path,
) -> None:
    # Past the limit and past what the outbox and the pipe hold together, so that slots are
    # held by answers nobody has read yet.
    count = 4 * MAX_IN_FLIGHT + 2500
    # One burner per core, and the daemon at their (lowest) priority: it is loaded, and the
    # tests other workers run meanwhile are not.
    with cpu_burners(per_core=1), raw_daemon(data_dir) as raw:
        lowest_priority(raw.proc.pid)
        reader = SlowReader(raw)
        raw.send(json.loads(request(0, "initialize", {"protocolVersion": 1})))
        assert "result" in reader.read(1)[0]
        burst = b"".join(request(n, "session/list", {}) for n in range(1, count + 1))
        threading.Thread(target=raw.send_bytes, args=(burst,), daemon=True).start()
        answers: list[dict[str, Any]] = []
        while len(answers) < count:
            # Pauses longer than a slot wait, with every slot held by an unread answer.
            time.sleep(1.5 * SLOT_WAIT)
            answers += reader.read(min(1500, count - len(answers)))
        reader.stop()
        assert sorted(a["id"] for a in answers) == list(range(1, count + 1))
        refused = [a for a in answers if "result" not in a]
        assert refused == [], refused[:3]
        assert raw.close(timeout=30) == 0
