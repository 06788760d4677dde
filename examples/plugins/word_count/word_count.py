#!/usr/bin/env python3
"""word_count: an example native plugin tool for acpd (protocol_version 1).

Reads one JSON request on stdin, writes one JSON response on stdout.
"""

import json
import sys


def main() -> None:
    request = json.load(sys.stdin)
    if request.get("protocol_version") != 1:
        json.dump({"protocol_version": 1, "ok": False, "error": "unsupported protocol"},
                  sys.stdout)
        return
    text = request["args"]["text"]
    counts = {"words": len(text.split()), "lines": len(text.splitlines()), "chars": len(text)}
    unit = request["args"].get("unit")
    shown = {unit: counts[unit]} if unit else counts
    output = ", ".join(f"{n} {name}" for name, n in shown.items())
    json.dump({"protocol_version": 1, "ok": True, "output": output, "data": shown}, sys.stdout)


if __name__ == "__main__":
    main()
