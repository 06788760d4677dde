"""The LSP face (`acpd lsp`): acpd for editors and tools that only have an LSP client.

Rules: pygls and lsprotocol are imported only here, and only `acpd lsp` imports this package
(`acpd serve` never does). This face does not use the ACP face (daemon/agent.py, methods.py,
rpc.py, prompting.py, turn.py): it drives the same tool pipeline (tools/setup.py) with local
capabilities, exactly as `acpd tools run` does. See docs/lsp.md.
"""
