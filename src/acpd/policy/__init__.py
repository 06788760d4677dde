"""Policy: the path sandbox, and (with the shell issue) shell parsing, rules and overlays."""
