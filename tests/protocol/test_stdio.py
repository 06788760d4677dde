"""The stdio transport on real pipes: order, end of input, pausing, partial writes."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

import anyio
import pytest

from acpd.daemon.stdio import READ_CHUNK, FdReader, FdWriter


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):  # a test closed it already
            os.close(fd)


def test_a_slow_consumer_gets_every_byte_in_order_then_end_of_input(
    pipe: tuple[int, int],
) -> None:
    read_fd, write_fd = pipe
    payload = bytes(range(256)) * 8192  # 2 MiB, far more than the pipe holds

    def produce() -> None:
        os.write(write_fd, payload)  # blocking: waits for the reader as the pipe fills
        os.close(write_fd)

    async def main() -> bytes:
        reader = FdReader(read_fd)
        received = bytearray()
        producer = threading.Thread(target=produce)
        producer.start()
        while chunk := await reader.receive():
            received += chunk
            await anyio.sleep(0.0005)  # busy elsewhere: input waits, unread
        assert await reader.receive() == b""  # and stays at end of input
        producer.join()
        return bytes(received)

    assert anyio.run(main) == payload


def test_unread_input_pauses_the_descriptor_instead_of_spinning_the_loop(
    pipe: tuple[int, int],
) -> None:
    read_fd, write_fd = pipe
    calls = 0

    async def main() -> None:
        nonlocal calls
        reader = FdReader(read_fd)
        original = reader._on_readable

        def counting() -> None:
            nonlocal calls
            calls += 1
            original()

        reader._on_readable = counting  # type: ignore[method-assign]
        os.write(write_fd, b"first")
        assert await reader.receive() == b"first"
        os.write(write_fd, b"x" * 10)
        await anyio.sleep(0.05)  # one chunk read ahead; then paused, not polled again
        os.write(write_fd, b"y" * 10)
        await anyio.sleep(0.2)  # nobody receives: a level-triggered reader would spin here
        assert await reader.receive() == b"x" * 10
        assert await reader.receive() == b"y" * 10
        reader.close()

    anyio.run(main)
    assert calls <= 5


def test_send_nowait_takes_what_fits_and_send_waits_for_the_rest(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    data = b"z" * (4 * READ_CHUNK + 123)  # more than a pipe buffer (64 KiB here)

    async def main() -> bytes:
        writer = FdWriter(write_fd)
        taken = writer.send_nowait(data)
        assert 0 < taken < len(data)
        assert writer.send_nowait(data) == 0  # full: nothing fits, nothing raised
        received = bytearray()

        async def drain() -> None:
            while len(received) < len(data):
                await anyio.wait_readable(read_fd)
                received.extend(os.read(read_fd, READ_CHUNK))

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            await writer.send(data[taken:])
        return bytes(received)

    assert anyio.run(main) == data


def test_a_write_to_a_closed_pipe_raises_for_the_connection_to_report(
    pipe: tuple[int, int],
) -> None:
    read_fd, write_fd = pipe
    os.close(read_fd)
    writer = FdWriter(write_fd)
    with pytest.raises(BrokenPipeError):
        writer.send_nowait(b"lost")
