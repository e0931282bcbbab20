"""A tiny stdio MCP server (standard library only) for behaviours no real server can show:
a server that crashes mid-call, one that is slow, one whose inverse fails.

State is a JSON object in ``--state FILE`` (rewritten after every write, sorted keys).
Tools: ``get {key, delay?}`` (with ``delay``, answered that many seconds later from a timer,
with the value at that time, while later requests are served), ``put {key, value}``,
``slow_put {key, value, delay}``, ``delete {key}``.
Environment knobs:
- ``FAKE_CRASH_ON_CALL=N``: exit(3) when the N-th tools/call arrives (before answering;
  with ``FAKE_CRASH_AFTER_APPLY=1`` after applying it).
- ``FAKE_REFUSE_PUT_VALUE=X``: ``put`` with value X answers isError.
- ``FAKE_ERROR_AFTER_PUT=X``: ``put`` with value X is applied, then answered isError (a server
  that reports an error although it wrote).
- ``FAKE_LOG=FILE``: append every tools/call (name, arguments, _meta) to FILE as a JSON line.
- ``FAKE_HANG=TOOL``: calls of TOOL are read and never answered (a server stuck mid-call).
- ``FAKE_DECOY=method|later_id|escaped``: every tools/call is first "answered" with a frame
  that ends like its answer but is not one (a ``method`` member in the middle; a later ``id``
  that parsers keep; a ``method`` key spelled with ``\\u`` escapes), then answered for real.
- ``FAKE_DECOY_PAD=N``: the decoy's text is N bytes longer (over 1 MiB: a large frame).
- ``FAKE_BATCH_ANSWERS=1``: every tools/call of the client's is answered inside a JSON-RPC batch
  (a one-element array), as a pre-2025-06-18 server may; the proxy's own (``syn-`` ids) are not.
- ``FAKE_BIG_NUMBER=1``: every answer to a tools/call of the client's carries a 5,000-digit
  integer in its result (valid JSON that Python's ``json.loads`` refuses; JavaScript reads it).
- ``FAKE_SLOW_REQUEST=S``: every other request (``ping``: ``{}``; any other method: "Method not
  found") is answered S seconds later from a timer, while later requests are served.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

TOOLS = [
    {"name": "get", "description": "Read a key", "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "put", "description": "Write a key", "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}, "value": {}}, "required": ["key", "value"]}},
    {"name": "slow_put", "description": "Write a key slowly", "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}, "value": {}, "delay": {"type": "number"}}}},
    {"name": "env", "description": "Read an environment variable of the server process", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "delete", "description": "Delete a key", "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}},
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", required=True)
    opts, _ = ap.parse_known_args()  # extra arguments are ignored (tests put tokens there)
    state: dict = {}
    if os.path.exists(opts.state):
        with open(opts.state, encoding="utf-8") as f:
            state = json.load(f)
    crash_on = int(os.environ.get("FAKE_CRASH_ON_CALL", "0") or 0)
    crash_after_apply = os.environ.get("FAKE_CRASH_AFTER_APPLY") == "1"
    refuse_value = os.environ.get("FAKE_REFUSE_PUT_VALUE")
    calls = 0

    def save() -> None:
        tmp = opts.state + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, sort_keys=True, indent=1)
        os.replace(tmp, opts.state)

    out_lock = threading.Lock()

    def send(obj: dict) -> None:
        with out_lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    decoy = os.environ.get("FAKE_DECOY")

    def send_decoy(mid) -> None:
        pad = "x" * int(os.environ.get("FAKE_DECOY_PAD", "0"))
        body = '{"content":[{"type":"text","text":"decoy%s"}]}' % pad
        frame = {"method": f'{{"result":{body},"method":"notifications/decoy","jsonrpc":"2.0","id":{json.dumps(mid)}}}',
                 "later_id": f'{{"jsonrpc":"2.0","id":{json.dumps(mid)},"result":{body},"id":"decoy-1"}}',
                 "escaped": f'{{"result":{body},"\\u006dethod":"x","jsonrpc":"2.0","id":{json.dumps(mid)}}}'}[decoy]
        with out_lock:
            sys.stdout.write(frame + "\n")
            sys.stdout.flush()

    def result(mid, value, error=False):
        if decoy:
            send_decoy(mid)
        body = {"content": [{"type": "text", "text": json.dumps(value) if not isinstance(value, str) else value}]}
        if error:
            body["isError"] = True
        elif not isinstance(value, str):
            body["structuredContent"] = value
        answer = {"jsonrpc": "2.0", "id": mid, "result": body}
        batch = os.environ.get("FAKE_BATCH_ANSWERS") and not str(mid).startswith("syn-")  # the proxy's own reads: plain
        if os.environ.get("FAKE_BIG_NUMBER") and not str(mid).startswith("syn-"):
            body["bigNumber"] = "__BIG__"
            text = json.dumps([answer] if batch else answer).replace('"__BIG__"', "9" * 5000)
            with out_lock:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()
            return
        send([answer] if batch else answer)

    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-06-18",
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "fake-kv", "version": "1.0"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            calls += 1
            if os.environ.get("FAKE_LOG"):
                with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as log:
                    log.write(json.dumps({"name": msg["params"]["name"], "arguments": msg["params"].get("arguments"),
                                          "meta": msg["params"].get("_meta")}) + "\n")
            name = msg["params"]["name"]
            args = msg["params"].get("arguments") or {}
            if crash_on and calls == crash_on and not crash_after_apply:
                os._exit(3)
            if name == os.environ.get("FAKE_HANG"):
                continue
            if name == "env":
                result(mid, {"name": args.get("name"), "value": os.environ.get(str(args.get("name")))})
                continue
            if name == "get":
                key = args.get("key")

                def answer(mid=mid, key=key) -> None:
                    if key in state:
                        result(mid, {"key": key, "value": state[key]})
                    else:
                        result(mid, f"no such key: {key}", error=True)
                if args.get("delay"):
                    timer = threading.Timer(float(args["delay"]), answer)
                    timer.daemon = True
                    timer.start()
                else:
                    answer()
                continue
            if name in ("put", "slow_put"):
                if name == "slow_put":
                    time.sleep(float(args.get("delay", 1)))
                if refuse_value is not None and str(args.get("value")) == refuse_value:
                    result(mid, "refused by the fake server", error=True)
                    continue
                state[args["key"]] = args.get("value")
                save()
                if crash_on and calls == crash_on:
                    os._exit(3)
                if os.environ.get("FAKE_ERROR_AFTER_PUT") is not None and str(args.get("value")) == os.environ["FAKE_ERROR_AFTER_PUT"]:
                    result(mid, "quota exceeded (but the value was written)", error=True)
                    continue
                result(mid, {"ok": True, "key": args["key"]})
            elif name == "delete":
                state.pop(args.get("key"), None)
                save()
                result(mid, {"ok": True})
            else:
                send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": f"Tool {name} not found"}})
        elif mid is not None and method is not None:
            reply = ({"jsonrpc": "2.0", "id": mid, "result": {}} if method == "ping" else
                     {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
            if os.environ.get("FAKE_SLOW_REQUEST"):
                slow = threading.Timer(float(os.environ["FAKE_SLOW_REQUEST"]), send, (reply,))
                slow.daemon = True
                slow.start()
            else:
                send(reply)


if __name__ == "__main__":
    main()
