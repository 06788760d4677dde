"""`python -P -m acpd.sandbox exec --profile FILE -- CMD...`: the editor-terminal launcher."""

import sys

from acpd.sandbox.launch import USAGE, exec_main

if len(sys.argv) > 1 and sys.argv[1] == "exec":
    raise SystemExit(exec_main(sys.argv[2:]))
print(USAGE, file=sys.stderr)
raise SystemExit(2)
