"""The `diagnostics` tool: the workspace's checkers, run under the shell policy, parsed into
structured diagnostics (specs.py states the rules). See docs/plugins.md."""
