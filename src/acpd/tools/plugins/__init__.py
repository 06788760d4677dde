"""Plugin tools: zigclaw-style `tool.toml` manifests in the plugin folders, run natively (a
process group in the sandbox) or as WASI modules (wasmtime, in-process), behind the external
tool filter and the capability presets, through the one pipeline. See docs/plugins.md.

manifest.py (the format), catalog.py (discovery, filter, presets, warnings), specs.py (the
ToolSpecs and their executor), native.py, wasi.py (the two runtimes), protocol.py (the JSON
wire), live.py (the registry in force and its hot reload), config.py (the config sections).
"""
