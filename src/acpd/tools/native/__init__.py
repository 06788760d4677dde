"""The native tools: memory_save/memory_search, load_skill, scheduler, compress_context.

They are core tools (`core__` ids, the `native` executor) and go through the one pipeline like
every other: policy, approvals, audit, output filters. Kept light: importing this package
imports nothing heavy (the pieces are in kit.py and its modules). See docs/native-tools.md.
"""
