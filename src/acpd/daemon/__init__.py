"""The acpd process: stdio transport, dispatcher, sessions, the agent loop, CLI."""
