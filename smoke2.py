import sys
from synartesis.remote.http import HttpUpstream
up = HttpUpstream(sys.argv[1], label="crm", headers={"Authorization": "Bearer sekrit"})
up.start(None, None)
print(up.request("initialize", {"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}, timeout=10)["serverInfo"], up.session_id)
up.notify("notifications/initialized")
print(up.request("tools/call", {"name":"get_customer","arguments":{"id":"c_001"}}, timeout=10))
up.close()
up2 = HttpUpstream(sys.argv[1], label="crm")
up2.start(None, None)
try:
    up2.request("initialize", {"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}, timeout=10)
except Exception as e: print(type(e).__name__, e.kind, e)
up2.close()
