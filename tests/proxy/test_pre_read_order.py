"""When a write's pre-read is sent (guards for any change that sends it sooner, such as from the
client's reader before the call reaches the lane, measured in issue 11 and not kept): each write
records the state it replaced, a person's edit between two writes included; no pre-read is sent
while an earlier write is at the server, nor for a call the lane holds."""
from __future__ import annotations

import json

from helpers import FS_POLICY, RawSession, files_proxy, kv_logged, open_journal


def _call(mid, name, arguments):
    return {"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def test_back_to_back_writes_each_record_the_state_they_replaced_a_persons_edit_included(tmp_path, fs_server):
    root, argv = files_proxy(tmp_path, fs_server, FS_POLICY)
    f = root / "a.txt"
    f.write_text("orig\n")
    expected = []
    with RawSession(argv) as s:
        s.handshake()
        mid = 0
        before = "orig\n"
        for i in range(6):
            for k in range(3):  # sent as soon as the previous answer is in: the lane may still settle it
                mid += 1
                expected.append(before)
                content = f"v{i}.{k}\n"
                assert s.call(mid, "write_file", {"path": str(f), "content": content}).get("isError") is not True
                before = content
            f.write_text(f"a person's edit {i}\n")  # between an answer and the next call
            before = f"a person's edit {i}\n"
        s.close()
    journal = tmp_path / "j.db"
    with open_journal(journal) as j:
        acts = j.actions(j.list_runs()[0].id)
        assert [a.status for a in acts] == ["applied"] * len(expected)
        assert [j.get_json(a.snapshot_ref)["content"] for a in acts] == expected


def test_a_write_sent_while_the_one_before_is_at_the_server_reads_the_state_it_left(tmp_path):
    manifest, journal, _store, log, env, argv = kv_logged(tmp_path)
    with RawSession(argv, env=env) as s:
        s.handshake()
        s.send(_call(1, "slow_put", {"key": "k", "value": "first", "delay": 0.5}))
        s.send(_call(2, "put", {"key": "k", "value": "second"}))  # before the first is answered
        s.wait_for(1, timeout=20)
        s.wait_for(2, timeout=20)
        s.close()
    with open_journal(journal) as j:
        acts = j.actions(j.list_runs()[0].id)
        assert [a.status for a in acts] == ["applied", "applied"]
        assert j.get_json(acts[0].snapshot_ref) == {"key": "k", "value": "old"}
        assert j.get_json(acts[1].snapshot_ref) == {"key": "k", "value": "first"}
    names = [json.loads(line)["name"] for line in log.read_text().splitlines()]
    # pre-read, write, read-back (the policy declares no post_state) for each: the second
    # write's pre-read only after the first write was answered
    assert names == ["get", "slow_put", "get", "get", "put", "get"], names


def test_a_write_the_lane_holds_sends_no_pre_read(tmp_path):
    manifest, journal, _store, log, env, argv = kv_logged(tmp_path)
    with RawSession(argv, env=env) as s:
        s.handshake()
        assert s.call(1, "put", {"key": "k", "value": "fine"}).get("isError") is not True
        held = s.call(2, "put", {"key": "k", "value": str(journal)})  # names synartesis's own journal
        assert held.get("isError") is True and "holding" in json.dumps(held), held
        s.close()
    names = [json.loads(line)["name"] for line in log.read_text().splitlines()]
    assert names == ["get", "put", "get"], names  # the first write's pre-read, write, read-back: no more
