from __future__ import annotations

import pytest

from acpd.providers.sse import SSEError, SSEEvent, SSEParser
from tests.providers.fake_server import FIXTURES


def feed_all(parser: SSEParser, *chunks: bytes) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events


def test_data_lines_of_one_event_are_joined_with_newlines() -> None:
    events = feed_all(SSEParser(), b"data: first\ndata:second\ndata:  third\n\n")
    assert events == [SSEEvent("first\nsecond\n third")]


def test_event_names_ids_and_comments() -> None:
    stream = b": keep-alive\nevent: message_start\nid: 7\ndata: {}\n\n:another\n\ndata: x\n\n"
    events = feed_all(SSEParser(), stream)
    assert events == [SSEEvent("{}", "message_start", "7"), SSEEvent("x", "message", "7")]


def test_crlf_and_lone_cr_line_endings() -> None:
    events = feed_all(SSEParser(), b"data: a\r\n\r\ndata: b\r\rdata: c\n\n")
    assert [e.data for e in events] == ["a", "b", "c"]


def test_crlf_split_between_two_chunks_is_one_line_ending() -> None:
    # If the LF after a chunk-final CR were taken as a second line ending, the empty line
    # would dispatch the event early and split "a" from "b".
    events = feed_all(SSEParser(), b"data: a\r", b"\ndata: b\r", b"\n\r\n")
    assert events == [SSEEvent("a\nb")]


def test_utf8_character_split_across_chunks() -> None:
    encoded = "data: café ☕\n\n".encode()
    cut = encoded.index("☕".encode()) + 1
    events = feed_all(SSEParser(), encoded[:cut], encoded[cut:])
    assert events == [SSEEvent("café ☕")]


def test_field_without_colon_bom_and_unknown_fields() -> None:
    events = feed_all(SSEParser(), b"\xef\xbb\xbfdata\nretry: 100\nfoo: bar\n\ndata:x\n\n")
    # `data` with no colon is an empty data line, which still makes an event.
    assert events == [SSEEvent(""), SSEEvent("x")]


def test_event_without_data_is_not_dispatched_and_name_does_not_leak() -> None:
    events = feed_all(SSEParser(), b"event: ping\n\ndata: y\n\n")
    assert events == [SSEEvent("y", "message")]


def test_cut_off_line_at_end_is_dropped() -> None:
    parser = SSEParser()
    assert feed_all(parser, b"data: complete\n\ndata: cut off") == [SSEEvent("complete")]
    assert parser.close() == []


def test_complete_lines_without_the_final_blank_line_are_kept_at_close() -> None:
    parser = SSEParser()
    assert feed_all(parser, b"event: message_stop\ndata: {}\n") == []
    assert parser.close() == [SSEEvent("{}", "message_stop")]


def test_done_marker_is_an_ordinary_event() -> None:
    assert feed_all(SSEParser(), b"data: [DONE]\n\n") == [SSEEvent("[DONE]")]


def test_line_cap() -> None:
    parser = SSEParser(max_line_bytes=64)
    parser.feed(b"data: " + b"x" * 50)
    with pytest.raises(SSEError, match="longer than 64 bytes"):
        parser.feed(b"y" * 20)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.sse")))
def test_every_fixture_parses_the_same_byte_by_byte(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    whole = SSEParser().feed(data)
    parser = SSEParser()
    single = feed_all(parser, *(data[i : i + 1] for i in range(len(data))))
    assert whole == single
    assert len(whole) == data.count(b"data:")
