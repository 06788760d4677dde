"""MCP servers an editor passes in `session/new` / `session/load` / `session/resume`.

The official `mcp` SDK is the client; it is imported only when a session has servers and its
first prompt starts them (see hub.py), never on the way to `initialize`. Modules:
  - config.py: `[mcp]` and `[mcp.servers.<name>] allow` in config.toml (light: pydantic only);
  - servers.py: the request's `mcpServers`, checked, secrets kept out of every repr;
  - names.py: `mcp__<server>__<tool>` names every provider accepts, collisions resolved;
  - spec.py: the ToolSpec of one MCP tool (light: no SDK import);
  - trust.py: the pipeline's extra rule for MCP tools (untrusted -> ask, unless allowlisted);
  - stdio.py, connection.py, results.py: the SDK side (lazy);
  - hub.py: one session's servers, started lazily, stopped with the session.
"""
