"""`synartesis serve` attacked (adversarial review 31c).

- A batch's ids were checked for repeats with ``list.count`` per id, quadratic in the batch: one
  POST of a 16 MiB batch (about 400 000 requests) held the event loop, so every session of the
  serve stopped answering, for hours. A batch that repeats an id is refused at once, whatever
  its size, and the serve answers other requests afterwards.
"""

from __future__ import annotations

import json

from test_serve_sessions import _init, _post, _serve_kv


def test_a_huge_batch_repeating_an_id_is_refused_without_holding_the_serve(tmp_path):
    _, port, token = _serve_kv(tmp_path)
    sid = _init(port, token)
    n = 200_000
    batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(n)] + [
        {"jsonrpc": "2.0", "id": 0, "method": "ping"}]
    status, _, body = _post(port, token, batch, sid, timeout=90)  # type: ignore[arg-type]
    assert status == 400 and "already in flight" in json.loads(body)["error"]["message"], body
    status, _, body = _post(port, token, {"jsonrpc": "2.0", "id": "after", "method": "ping"}, sid)
    assert status == 200 and '"after"' in body, body
