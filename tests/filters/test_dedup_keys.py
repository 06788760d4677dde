"""The block-wise dedup keys equal the line-by-line definition, and the dedup strategy folds
exactly what the per-line algorithm it replaced folded."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from acpd.tools.filters.strategies.base import UNLIMITED
from acpd.tools.filters.strategies.lines import Dedup
from acpd.tools.filters.strategies.normalize import block_keys, line_key

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "outputs"

# Pieces that make the patterns match, almost match, or match where they must not.
PIECES = [
    "0",
    "1",
    "5",
    "9",
    "12",
    "2024",
    "1700000000",
    "17000000001",
    "2024-01-02",
    "-",
    "T",
    " ",
    ":",
    "10:11:12",
    "10:11",
    ".",
    ",",
    "Z",
    "+01:00",
    "+0100",
    "Jan",
    "Dec",
    "Ma",
    "y",
    " 3 ",
    "Feb 12 ",
    "x",
    "0x",
    "0xFF",
    "ff",
    "deadbeefcafe",
    "abcdef12",
    "ABCDEF",
    "abcd",
    "-abcd",
    "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
    "12345678-1234-",
    "_",
    "a",
    "g",
    "é",
    "٣",
    "\x00",
    "\x01",
    "<n>",
    "<ts>",
    "\t",
]
line_st = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


def reference_dedup(lines: list[str], numbers: bool, window: int) -> list[str]:
    """The per-line algorithm the block-wise one replaced."""
    out: list[str] = []
    counts: list[int] = []
    recent: dict[str, int] = {}
    for line in lines:
        key = line_key(line, numbers) if line else line
        where = recent.get(key)
        if where is not None and line:
            counts[where] += 1
            continue
        if len(recent) >= window:
            del recent[next(iter(recent))]
        recent[key] = len(out)
        out.append(line)
        counts.append(1)
    return [f"{x}  (repeated {n} times)" if n > 1 else x for x, n in zip(out, counts, strict=True)]


@settings(max_examples=800, deadline=None)
@given(st.lists(line_st, min_size=1, max_size=8), st.booleans())
def test_block_keys_equal_line_keys(lines: list[str], numbers: bool) -> None:
    assert block_keys(lines, numbers) == [line_key(x, numbers) if x else x for x in lines]


def test_block_keys_on_random_blocks() -> None:
    rnd = random.Random(3)
    for numbers in (True, False):
        for _ in range(8000):
            lines = [
                "".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 14)))
                for _ in range(rnd.randint(1, 6))
            ]
            expected = [line_key(x, numbers) if x else x for x in lines]
            assert block_keys(lines, numbers) == expected, lines


def test_block_keys_examples() -> None:
    lines = [
        "2025-03-04T10:00:00.186Z INFO GET /health 200 in 6ms "
        "id=010c4759-254b-46b4-a88d-9c1c5e8766ed",
        "Mar  4 10:00:01 host sshd[811]: Accepted key 0x1f for deploy",
        "at 1709546401.25 took 12.5ms, commit 3f2a9c0d1e4b7a6c",
        "short line, no digits: deadbeefcafebabe",  # left alone (a quirk kept on purpose)
        "",
        "a line with a\nnewline in it 12:00:00",  # another stage's output: per line
    ]
    assert block_keys(lines, True) == [
        "<ts> INFO GET /health <n> in <n>ms id=<uuid>",
        "<ts> host sshd[<n>]: Accepted key <id> for deploy",
        "at <ts> took <n>ms, commit <id>",
        "short line, no digits: deadbeefcafebabe",
        "",
        "a line with a\nnewline in it <ts>",
    ]


def test_dedup_folds_what_the_per_line_algorithm_folded() -> None:
    samples = [
        (FIXTURES / "app-log.txt").read_text().splitlines(),
        (FIXTURES / "docker-compose.txt").read_text().splitlines(),
        (FIXTURES / "cargo-build.txt").read_text().splitlines() * 50,
    ]
    rnd = random.Random(5)
    samples.append(
        ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 6))) for _ in range(9000)]
    )
    for lines in samples:
        for numbers in (True, False):
            for window in (1, 3, 8):
                got = Dedup(numbers, window).apply(lines, UNLIMITED).lines
                assert got == reference_dedup(lines, numbers, window)
