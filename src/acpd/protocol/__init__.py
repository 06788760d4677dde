"""Sans-io protocol core: NDJSON framing, JSON-RPC 2.0 and ACP v1 types.

Nothing in this package reads a file, touches a socket, looks at a clock or imports asyncio.
The daemon feeds it bytes and sends what it returns.
"""
