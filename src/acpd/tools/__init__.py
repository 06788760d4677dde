"""The tool system: specs, registry, the one pipeline every call goes through, executors.

Tools never touch the editor or the protocol: they get capabilities (a file system, a command
runner, a progress sink) injected through `ToolContext`.
"""
