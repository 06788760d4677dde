"""A misbehaving ACP agent for the plugin's robustness test: answers initialize, then sends
garbage, an unknown method, a handler error case and a line split across writes, and
records what the plugin answers (to the file named in argv[1])."""

import json
import sys
from typing import Any


def send(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def request(request_id: str, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": params}) + "\n"


def main() -> None:
    with open(sys.argv[1], "w") as out:
        for raw in sys.stdin:
            msg = json.loads(raw)
            if msg.get("method") == "initialize":
                send("this is not json\n")
                send("[1, 2]\n")
                send(request("u1", "editor/unknown", {}))
                send(request("r1", "fs/read_text_file",
                             {"sessionId": "s", "path": "/nonexistent/x"}))
                line = request("t1", "terminal/output", {"sessionId": "s", "terminalId": "nope"})
                send(line[:10])
                send(line[10:])
                send(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                 "result": {"protocolVersion": 1}}) + "\n")
            elif "id" in msg and "method" not in msg:
                out.write(json.dumps(msg) + "\n")
                out.flush()


main()
