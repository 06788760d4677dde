"""A real MCP server for the tests, written with the official `mcp` SDK (mcp 2's MCPServer,
which mcp 1 called FastMCP).

    python -m tests.mcp.server stdio [--child MARKER]   # over stdin/stdout
    python -m tests.mcp.server http PORT_FILE           # streamable HTTP on 127.0.0.1:<ephemeral>
    python -m tests.mcp.server sse PORT_FILE            # SSE on 127.0.0.1:<ephemeral>
    python -m tests.mcp.server broken                   # says why on stderr and exits 1

Tools: echo, fail (an isError result), slow, crash (the process dies mid-call), grow (adds a
tool and sends notifications/tools/list_changed), env (reads one variable), leak (returns a
credential, for redaction). `--child MARKER` starts a grandchild (`sleep` with MARKER in its
command line) so a test can check that the whole process tree ends with the session.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("acpd-test", log_level="ERROR")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with `reason` (an isError result)."""
    raise ToolError(reason)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """The server process dies in the middle of the call."""
    sys.stderr.write("crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool named `name` and tell the client its tool list changed."""

    def added(text: str) -> str:
        return f"{name}: {text}"

    server.add_tool(added, name=name, description=f"added at run time as {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
def env(name: str) -> str:
    """The value of one environment variable of the server ("(unset)" when absent)."""
    return os.environ.get(name, "(unset)")


@server.tool()
def leak() -> str:
    """Returns a credential-shaped string."""
    return "the key is ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _child(marker: str) -> None:
    subprocess.Popen(
        ["sleep", "300", marker], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _serve_http(kind: str, port_file: str) -> None:
    import uvicorn

    app = server.streamable_http_app() if kind == "http" else server.sse_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    tmp = anyio.Path(port_file + ".tmp")
    await tmp.write_text(str(sock.getsockname()[1]))
    await tmp.rename(port_file)
    await http.serve(sockets=[sock])


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "stdio"
    if mode == "broken":
        sys.stderr.write("cannot start: missing configuration file /nonexistent/conf\n")
        return 1
    if mode == "stdio":
        if len(argv) >= 3 and argv[1] == "--child":
            _child(argv[2])
        server.run("stdio")
        return 0
    if mode in ("http", "sse"):
        anyio.run(_serve_http, mode, argv[1])
        return 0
    sys.stderr.write(f"unknown mode {mode}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
