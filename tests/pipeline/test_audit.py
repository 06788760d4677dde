"""The audit log: whole lines, O_APPEND, 0600, secrets masked, torn tails found and survived;
and a kill -9 in the middle of a stream of writes and audited calls."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from acpd.tools.audit import AuditLog, inspect, read_records, tail_lines

REPO = Path(__file__).resolve().parents[2]


def test_lines_are_appended_whole_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "d" / "audit.jsonl"
    log = AuditLog(path)
    log.write({"n": 1})
    log.close()
    again = AuditLog(path)
    again.write({"n": 2, "text": "é"})
    again.close()
    assert [r and r["n"] for r in read_records(path)] == [1, 2]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.O_APPEND & _flags_of_a_fresh_log(tmp_path)


def _flags_of_a_fresh_log(tmp_path: Path) -> int:
    log = AuditLog(tmp_path / "flags.jsonl")
    import fcntl

    flags = fcntl.fcntl(log._fd, fcntl.F_GETFL)
    log.close()
    return flags


def test_a_torn_tail_is_detected_and_new_lines_start_fresh(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.write({"n": 1})
    log.close()
    with path.open("ab") as handle:
        handle.write(b'{"n": 2, "half')
    health = inspect(path)
    assert health.torn and health.torn_bytes == len(b'{"n": 2, "half')
    assert "torn" in health.describe()
    reopened = AuditLog(path)
    assert reopened.health.torn
    reopened.write({"n": 3})
    reopened.write({"n": 4})
    reopened.close()
    records = list(read_records(path))
    assert records == [{"n": 1}, None, {"n": 3}, {"n": 4}]
    assert not inspect(path).torn
    assert path.read_bytes().startswith(b'{"n":1}\n{"n": 2, "half\n')  # never rewritten


def test_tail_lines_reads_from_the_end(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for n in range(5000):
        log.write({"n": n, "pad": "x" * 40})
    log.close()
    last = tail_lines(path, 3)
    assert [json.loads(line)["n"] for line in last] == [4997, 4998, 4999]


CRASH_CHILD = textwrap.dedent('''
    import anyio, sys, pathlib
    from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
    from acpd.tools.audit import AuditLog
    from acpd.tools.builtin import core_registry
    from acpd.tools.permissions import ToolPolicy
    from acpd.tools.pipeline import CallEnv, ToolPipeline

    class Quiet:
        async def publish(self, view, *, first):
            return None
        async def ask(self, view):
            return "allow_once"

    ws, data = sys.argv[1], pathlib.Path(sys.argv[2])
    pipeline = ToolPipeline(core_registry(), ToolPolicy(), AuditLog(data / "audit.jsonl"))
    env = CallEnv(ws, (ws,), "auto", LocalFileSystem(), LocalCommandRunner(), Quiet())

    async def main():
        n = 0
        while True:
            n += 1
            body = f"new-{n}\\n" * 20000   # 100+ KB: a write takes a while
            await pipeline.run(f"w{n}", "write", {"path": f"f{n % 8}.txt", "content": body}, env)
            await pipeline.run(f"r{n}", "list_directory", {"path": "."}, env)
            print(n, flush=True)

    anyio.run(main)
''')


def test_kill_9_leaves_whole_files_and_whole_audit_lines(tmp_path: Path) -> None:
    ws, data = tmp_path / "ws", tmp_path / "data"
    ws.mkdir()
    data.mkdir()
    for n in range(8):
        (ws / f"f{n}.txt").write_text("old\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for round_ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", CRASH_CHILD, str(ws), str(data)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        assert child.stdout is not None
        for _ in range(10 + 7 * round_):  # let it get going, a different point each round
            assert child.stdout.readline(), "the child died on its own"
        time.sleep(0.003 * round_)
        child.send_signal(signal.SIGKILL)
        child.wait()
    for n in range(8):
        text = (ws / f"f{n}.txt").read_text()
        assert text == "old\n" or (
            text.startswith("new-") and len(set(text.splitlines())) == 1
            and text.count("\n") == 20000
        ), f"f{n}.txt is torn: {text[:40]!r}..."
    raw = (data / "audit.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    records = list(read_records(data / "audit.jsonl"))
    assert len(records) >= 60 and all(r is not None for r in records)
    assert {r["name"] for r in records if r} == {"write", "list_directory"}


def test_a_torn_line_is_reported_on_the_next_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = AuditLog(data / "audit.jsonl")
    log.write({"n": 1})
    log.close()
    with (data / "audit.jsonl").open("ab") as handle:
        handle.write(b'{"ts": "2026-')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACPD_")}
    env.update(PYTHONPATH=str(REPO / "src"), ACPD_CONFIG=str(tmp_path / "none.toml"))
    tail = subprocess.run(
        [sys.executable, "-m", "acpd", "audit", "tail", "--data-dir", str(data)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert tail.returncode == 0 and "torn" in tail.stderr
    assert tail.stdout.splitlines()[0] == '{"n":1}'
    run = subprocess.run(
        [sys.executable, "-m", "acpd", "tools", "run", "list_directory", "--data-dir",
         str(data), "--cwd", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr
    assert "torn" in run.stderr
    records = list(read_records(data / "audit.jsonl"))
    assert records[0] == {"n": 1} and records[1] is None
    assert records[2] is not None and records[2]["caller"] == "cli"
    assert records[2]["caller_id"] is None  # a CLI call is made in no ACP session


def test_text_that_is_not_utf8_is_written_not_raised(tmp_path: Path) -> None:
    # A non-UTF-8 file name reaches Python as surrogate escapes; a lone surrogate can come
    # from anywhere JSON was parsed leniently. Neither may cost the record.
    log = AuditLog(tmp_path / "a.jsonl")
    log.write({"path": os.fsdecode(b"dir\xff/f"), "other": "x\ud800y", "keys": {"\udcfe": 1}})
    (record,) = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert record["path"] == "dir\\xff/f"
    assert record["other"] == "x\ufffdy" and record["keys"] == {"\\xfe": 1}


def _all_records(path: Path) -> list[dict[str, object] | None]:
    """Oldest first: audit.jsonl.N ... .1, then audit.jsonl."""
    rotated = sorted(path.parent.glob(path.name + ".*"),
                     key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else -1,
                     reverse=True)
    return [r for p in [*rotated, path] if p.suffix != ".lock" for r in read_records(p)]


def test_a_log_past_max_bytes_is_rotated_and_the_oldest_dropped(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, max_bytes=2000, keep=3)
    for n in range(400):
        log.write({"n": n, "pad": "x" * 40})
    log.close()
    names = sorted(p.name for p in tmp_path.iterdir() if p.name != "audit.lock")
    assert names == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2", "audit.jsonl.3"]
    assert all(p.stat().st_size <= 2000 + 100 for p in tmp_path.glob("audit.jsonl*"))
    numbers = [r and r["n"] for r in _all_records(path)]
    assert numbers == list(range(numbers[0], 400))  # the newest, in order, none missing
    assert stat.S_IMODE((tmp_path / "audit.jsonl.1").stat().st_mode) == 0o600
    unbounded = AuditLog(tmp_path / "never.jsonl", max_bytes=0)
    for n in range(400):
        unbounded.write({"n": n, "pad": "x" * 40})
    unbounded.close()
    assert not list(tmp_path.glob("never.jsonl.*"))


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from acpd.tools.audit import AuditLog
    log = AuditLog(Path(sys.argv[1]), max_bytes=4096, keep=10_000)
    for n in range(int(sys.argv[3])):
        log.write({"w": sys.argv[2], "n": n, "pad": "y" * 30})
""")


def test_writers_in_several_processes_lose_no_line_across_rotations(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(w), "400"],
                                env=env) for w in range(4)]
    assert [p.wait(timeout=120) for p in writers] == [0, 0, 0, 0]
    records = _all_records(path)
    assert None not in records  # no torn line
    seen = sorted((str(r["w"]), int(str(r["n"]))) for r in records if r is not None)
    assert seen == sorted((str(w), n) for w in range(4) for n in range(400))
    assert len(list(tmp_path.glob("audit.jsonl.*"))) > 10  # it did rotate, many times
