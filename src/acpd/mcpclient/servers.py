"""The `mcpServers` of a session request, checked into ServerParams.

ACP v1 shapes: stdio `{name, command, args, env: [{name, value}]}` (`type` absent or
"stdio"), http and sse `{type, name, url, headers: [{name, value}]}`. A malformed entry is an
invalid-params error naming the entry and the field; nothing of it is kept.

Secrets: `env` values and `headers` values are credentials as often as not. They live only in
ServerParams (left out of its repr) and in the server's process or HTTP client: never logged,
never written to the session store, never shown to the model or the editor. What is shown
(`describe()`) is the command's base name or the URL without its query and user info.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

Transport = Literal["stdio", "http", "sse"]
MAX_SERVERS = 64
MAX_TEXT = 64 * 1024
MIN_SECRET = 8


class BadServer(ValueError):
    """An `mcpServers` entry that cannot be used; the message says which and why."""


@dataclass(frozen=True, slots=True)
class ServerParams:
    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = field(default=(), repr=False)
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    url: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def identity(self) -> str:
        """What the server is (command and args, or URL; never env or headers): a remembered
        "always allow" is bound to it, so another program under the same name starts over."""
        what = "\0".join((self.transport, self.command, *self.args, self.url))
        return hashlib.sha256(what.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def scrub(self, text: str) -> str:
        """`text` with every `env` and `headers` value this server was given replaced: a
        server that echoes its token (in a result, an error, its stderr) must not put it in
        front of the model or into the session store. Values shorter than MIN_SECRET and
        absolute paths are left: too common to be secrets, and replacing them garbles text."""
        given = [(v, "mcp-env") for _, v in self.env] + [(v, "mcp-header") for _, v in self.headers]
        # `Authorization: Bearer <token>`: the token alone too.
        given += [(v.split(" ", 1)[1], "mcp-header") for _, v in self.headers if " " in v]
        for value, kind in sorted(given, key=lambda pair: -len(pair[0])):  # longest first
            if len(value) >= MIN_SECRET and not value.startswith("/") and value in text:
                text = text.replace(value, f"[REDACTED:{kind}]")
        return text

    def describe(self) -> str:
        if self.transport == "stdio":
            return os.path.basename(self.command) or self.command
        # Scheme, host and port only: services put keys in the path as well as the query.
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        try:
            port = f":{parts.port}" if parts.port else ""
        except ValueError:
            port = ""
        return f"{parts.scheme}://{host}{port}"


def parse_servers(raw: Any) -> list[ServerParams]:
    """Raises BadServer for a malformed list or entry, or two entries with one name."""
    if not isinstance(raw, list):
        raise BadServer("mcpServers must be a list")
    if len(raw) > MAX_SERVERS:
        raise BadServer(f"mcpServers lists {len(raw)} servers; at most {MAX_SERVERS}")
    servers = [_server(n, entry) for n, entry in enumerate(raw)]
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise BadServer(f"mcpServers has two servers named {server.name!r}")
        seen.add(server.name)
    return servers


def _server(n: int, entry: Any) -> ServerParams:
    where = f"mcpServers[{n}]"
    if not isinstance(entry, dict):
        raise BadServer(f"{where} must be an object")
    name = _text(entry.get("name"), f"{where}.name", limit=128)
    kind = entry.get("type", "stdio")
    where = f"{where} ({name!r})"
    if kind == "stdio":
        args = entry.get("args", [])
        if not isinstance(args, list):
            raise BadServer(f"{where}.args must be a list of strings")
        return ServerParams(
            name, "stdio", command=_text(entry.get("command"), f"{where}.command"),
            args=tuple(_text(a, f"{where}.args", empty=True) for a in args),
            env=_pairs(entry.get("env", []), f"{where}.env"),
        )
    if kind in ("http", "sse"):
        url = _text(entry.get("url"), f"{where}.url")
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise BadServer(f"{where}.url must be an http:// or https:// URL")
        return ServerParams(
            name, kind, url=url, headers=_pairs(entry.get("headers", []), f"{where}.headers"),
        )
    raise BadServer(f"{where}.type must be stdio, http or sse")


def _text(value: Any, where: str, *, limit: int = MAX_TEXT, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty):
        raise BadServer(f"{where} must be a non-empty string")
    if len(value) > limit or "\x00" in value:
        raise BadServer(f"{where} is longer than {limit} characters or holds NUL")
    return value


def _pairs(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        raise BadServer(f"{where} must be a list of {{name, value}}")
    pairs: list[tuple[str, str]] = []
    for item in value:
        if not isinstance(item, dict):
            raise BadServer(f"{where} must be a list of {{name, value}}")
        key = _text(item.get("name"), f"{where}[].name", limit=1024)
        if "=" in key and where.endswith(".env"):
            raise BadServer(f"{where}[].name must not contain '='")
        # The value is never echoed in a message: it is a secret as often as not.
        pairs.append((key, _text(item.get("value"), f"{where}[{key}].value", empty=True)))
    return tuple(pairs)
