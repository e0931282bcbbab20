"""A remote MCP server (Streamable HTTP, JSON answers) that answers initialize and tools/list
and refuses every tools/call with a 403 whose plain-text body quotes the X-Api-Key header it
was sent, as many APIs quote the key they reject; with ``ECHO_SID`` set, its initialize answer
gives that Mcp-Session-Id. Prints its port."""
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        key = self.headers.get("x-api-key", "")
        m = body.get("method") if isinstance(body, dict) else None
        if m == "initialize":
            out = {"jsonrpc":"2.0","id":body["id"],"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}}
        elif m == "tools/list":
            out = {"jsonrpc":"2.0","id":body["id"],"result":{"tools":[{"name":"put","inputSchema":{"type":"object"}}]}}
        elif m == "tools/call":
            text = f"forbidden: the key {key} may not call this tool".encode()
            self.send_response(403); self.send_header("content-type","text/plain"); self.send_header("content-length",str(len(text))); self.end_headers(); self.wfile.write(text); return
        else:
            self.send_response(202); self.send_header("content-length","0"); self.end_headers(); return
        data = json.dumps(out).encode()
        self.send_response(200); self.send_header("content-type","application/json"); self.send_header("content-length",str(len(data)))
        if m == "initialize" and os.environ.get("ECHO_SID"):  # a session id as raw bytes (latin-1)
            self._headers_buffer.append(b"Mcp-Session-Id: " + os.environ["ECHO_SID"].encode("latin-1") + b"\r\n")
        self.end_headers(); self.wfile.write(data)
    def do_GET(self):
        self.send_response(405); self.send_header("content-length","0"); self.end_headers()
    def do_DELETE(self):
        self.send_response(200); self.send_header("content-length","0"); self.end_headers()
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
