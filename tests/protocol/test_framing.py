from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpd.protocol.framing import (
    DEFAULT_MAX_LINE_BYTES,
    HEAD_BYTES,
    Frame,
    Line,
    LineDecoder,
    Oversize,
    encode,
    sanitize,
)


def feed_all(decoder: LineDecoder, chunks: list[bytes]) -> list[Frame]:
    frames: list[Frame] = []
    for chunk in chunks:
        frames.extend(decoder.feed(chunk))
    frames.extend(decoder.close())
    return frames


STREAM = b'{"a":1}\n{"b":"x\\ny"}\r\n\n   \n{"c":[1,2,3]}\n'
EXPECTED = [Line(b'{"a":1}'), Line(b'{"b":"x\\ny"}\r'), Line(b'{"c":[1,2,3]}')]


def test_many_frames_in_one_chunk_blank_lines_skipped_and_crlf_kept_for_the_parser() -> None:
    assert feed_all(LineDecoder(), [STREAM]) == EXPECTED
    # The \r that CRLF leaves behind is JSON whitespace: the line still parses.
    assert orjson.loads(EXPECTED[1].data) == {"b": "x\ny"}


@pytest.mark.parametrize("cut", range(len(STREAM) + 1))
def test_a_split_at_every_byte_boundary_gives_the_same_frames(cut: int) -> None:
    assert feed_all(LineDecoder(), [STREAM[:cut], STREAM[cut:]]) == EXPECTED


def test_one_byte_at_a_time() -> None:
    assert feed_all(LineDecoder(), [bytes([b]) for b in STREAM]) == EXPECTED


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
    cap=st.integers(min_value=1, max_value=50),
)
def test_any_chunking_gives_the_same_frames(lines: list[bytes], cuts: list[int], cap: int) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    whole = feed_all(LineDecoder(cap), [stream])
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert feed_all(LineDecoder(cap), chunks) == whole
    expected: list[Frame] = [
        Oversize(len(line), line[:HEAD_BYTES]) if len(line) > cap else Line(line)
        for line in lines
        if len(line) > cap or line.strip()
    ]
    assert whole == expected


def test_a_line_over_the_cap_across_many_chunks_is_one_oversize_and_the_next_line_parses() -> None:
    decoder = LineDecoder(100)
    head = b'{"jsonrpc":"2.0","id":7,"params":"'
    frames: list[Frame] = []
    frames += decoder.feed(head)
    for _ in range(50):
        frames += decoder.feed(b"x" * 64)
        assert len(decoder._buffer) <= 100  # never more than the cap of the long line is held
    frames += decoder.feed(b'"}\n{"ok":true}\n')
    size = len(head) + 50 * 64 + 2
    assert frames == [Oversize(size, (head + b"x" * 64 * 50)[:HEAD_BYTES]), Line(b'{"ok":true}')]


def test_the_buffer_never_holds_much_more_than_the_cap() -> None:
    decoder = LineDecoder(1000)
    for _ in range(100):
        decoder.feed(b"y" * 999)
        assert len(decoder._buffer) <= 1000 + 999
    assert decoder.feed(b"\n") == [Oversize(99_900, b"y" * HEAD_BYTES)]


def test_a_line_exactly_at_the_cap_is_accepted_and_one_byte_more_is_not() -> None:
    decoder = LineDecoder(10)
    assert decoder.feed(b"0123456789\n01234567890\n") == [
        Line(b"0123456789"),
        Oversize(11, b"01234567890"),
    ]
    assert decoder.feed(b"01234") == []
    assert decoder.feed(b"56789\n") == [Line(b"0123456789")]
    assert decoder.feed(b"01234") == []
    assert decoder.feed(b"567890\n") == [Oversize(11, b"01234567890")]


def test_close_without_a_trailing_newline_returns_the_last_line_once() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b'{"a":1}\n{"b"') == [Line(b'{"a":1}')]
    assert decoder.feed(b":2}") == []
    assert decoder.close() == [Line(b'{"b":2}')]
    assert decoder.close() == []


def test_close_with_only_whitespace_pending_returns_nothing() -> None:
    decoder = LineDecoder()
    decoder.feed(b"  \r")
    assert decoder.close() == []


def test_close_in_the_middle_of_an_oversize_line() -> None:
    decoder = LineDecoder(8)
    decoder.feed(b"123456789abc")
    assert decoder.close() == [Oversize(12, b"123456789abc")]
    assert decoder.close() == []


def test_lowering_the_cap_applies_to_the_line_being_buffered() -> None:
    decoder = LineDecoder(100)
    assert decoder.feed(b"x" * 50) == []
    decoder.max_line_bytes = 20
    assert decoder.feed(b"x" * 5) == []
    assert decoder.feed(b"\nok\n") == [Oversize(55, b"x" * 55), Line(b"ok")]


def test_raising_the_cap_lets_longer_lines_through() -> None:
    decoder = LineDecoder(10)
    assert decoder.feed(b"x" * 20 + b"\n") == [Oversize(20, b"x" * 20)]
    decoder.max_line_bytes = 30
    assert decoder.feed(b"x" * 20 + b"\n") == [Line(b"x" * 20)]


def test_the_default_cap_is_64_mib_and_a_cap_must_be_positive() -> None:
    assert LineDecoder().max_line_bytes == DEFAULT_MAX_LINE_BYTES == 64 * 1024 * 1024
    with pytest.raises(ValueError):
        LineDecoder(0)


# --- encode ----------------------------------------------------------------------------------


def test_encode_is_one_line_even_with_newlines_and_control_characters_in_strings() -> None:
    message = {"text": "a\nb\r\nc\u2028d\u0000e\x1b", "nested": [{"k": "\n"}]}
    data = encode(message)
    assert data.endswith(b"\n") and data.count(b"\n") == 1 and b"\r" not in data
    assert orjson.loads(data) == message


def test_encode_keeps_non_ascii_as_utf8() -> None:
    data = encode({"text": "héllo ✓ 😀 日本"})
    assert "héllo ✓ 😀 日本".encode() in data


def test_encode_repairs_lone_surrogates_instead_of_crashing() -> None:
    # Text decoded with errors="surrogateescape" (file names, process output) has these.
    raw = b"caf\xe9 \xff".decode("utf-8", "surrogateescape")
    data = encode({"result": {"content": raw, raw: ["\ud800", "ok"]}})
    assert data.count(b"\n") == 1
    assert orjson.loads(data) == {
        "result": {"content": "caf\ufffd \ufffd", "caf\ufffd \ufffd": ["\ufffd", "ok"]}
    }


def test_encode_joins_a_well_formed_surrogate_pair() -> None:
    assert orjson.loads(encode({"t": "\ud83d\ude00"})) == {"t": "😀"}


def test_encode_turns_integers_beyond_64_bits_into_strings() -> None:
    data = encode({"big": 2**64, "neg": -(2**63) - 1, "max": 2**64 - 1, "t": (1, 2)})
    assert orjson.loads(data) == {
        "big": str(2**64),
        "neg": str(-(2**63) - 1),
        "max": 2**64 - 1,
        "t": [1, 2],
    }


def test_encode_writes_nan_as_null() -> None:
    assert orjson.loads(encode({"x": float("nan"), "y": float("inf")})) == {"x": None, "y": None}


def test_encode_still_refuses_what_is_a_programming_error() -> None:
    with pytest.raises(TypeError):
        encode({"x": {1, 2}})


def test_sanitize_leaves_clean_values_alone() -> None:
    value = {"a": [1, 2.5, None, True, "x"], "b": {"c": "d"}}
    assert sanitize(value) == value


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=5), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_encode_never_fails_and_never_embeds_a_newline(value: object) -> None:
    data = encode({"jsonrpc": "2.0", "id": 1, "result": value})
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    data.decode("utf-8")  # valid UTF-8, whatever went in
    assert orjson.loads(data)["id"] == 1
