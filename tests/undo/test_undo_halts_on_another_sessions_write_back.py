"""Adversarial review 17, F4 (ABA): session A wrote k0 = A; session C then wrote k0 = C and
k0 = A again. Undoing A found "state matches" (by coincidence) and put v0 back, wiping C's two
writes unnamed. A write of another session to the resource after this one, still in effect,
halts the undo and is named, drift or not; --force --yes overwrites as asked."""

from __future__ import annotations

import json
import os

import pytest
from helpers import FAKE_POLICY, RawSession, cli, kv_proxy, open_journal


def test_undo_halts_when_another_session_wrote_the_resource_back_to_the_same_value(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    for name, values in (("sa", ["A"]), ("sc", ["C", "A"])):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            for n, v in enumerate(values, 1):
                assert not s.call(n, "put", {"key": "k0", "value": v}).get("isError")
    plan = cli("undo", "sa", "--dry-run", *flags)
    assert plan.returncode == 1 and "another session wrote this resource" in plan.stdout, plan.stdout
    halted = cli("undo", "sa", *flags)
    assert halted.returncode == 1 and "of session s-" in halted.stdout, halted.stdout + halted.stderr
    assert json.loads(state.read_text())["k0"] == "A"
    with open_journal(journal) as j:
        assert {a.status for r in j.list_runs() for a in j.actions(r.id)} == {"applied"}
        # the halt marks no action, and prune keeps the run all the same (adversarial review 19, F8)
        [sa] = [r for r in j.list_runs() if any(a.args_ref and j.get_json(a.args_ref) == {"key": "k0", "value": "A"}
                                                for a in j.actions(r.id)) and len(j.actions(r.id)) == 1]
        assert j.prunable(sa).startswith("its last undo halted; a person must look at it first")
        assert f"`synartesis undo {sa.id[:8]}` again" in j.prunable(sa)
    # nor the run whose write the halt named (adversarial review 20, F4: pruned, and the next
    # undo of sa went through, wiping sc's write-back unnamed)
    pruned = cli("prune", "--older-than", "0", "--yes", *flags)
    assert "its kv.put" in pruned.stdout + pruned.stderr and "prune them together" in pruned.stdout + pruned.stderr, \
        pruned.stdout + pruned.stderr
    with open_journal(journal) as j:
        assert len(j.list_runs()) == 2
    preview = cli("undo", "sa", "--force", *flags)  # lists what --force --yes would remove
    assert preview.returncode == 1 and "of session s-" in preview.stdout and "nothing has drifted" not in preview.stdout, \
        preview.stdout
    assert json.loads(state.read_text())["k0"] == "A"
    forced = cli("undo", "sa", "--force", "--yes", *flags)
    assert forced.returncode == 0 and json.loads(state.read_text())["k0"] == "v0", forced.stdout + forced.stderr


# the kv server under a second name: another client's entry for the same command line
TWO_NAMES = FAKE_POLICY.replace("  kv: {}\n", "  kv: {}\n  kv2: {}\n") + FAKE_POLICY.split("tools:\n", 1)[1].replace("kv.", "kv2.")


def _sessions(argv_of, writes) -> None:
    for name, server, values in writes:
        with RawSession(argv_of(server), env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            for n, v in enumerate(values, 1):
                assert not s.call(n, "put", {"key": "k0", "value": v}).get("isError")


def test_another_sessions_write_through_another_name_for_the_same_server_halts_the_undo(tmp_path):
    # adversarial review 18, F1: sc reached the very same server as kv2, and the halt missed it
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=TWO_NAMES)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    at = argv.index("--server") + 1
    _sessions(lambda server: [*argv[:at], server, *argv[at + 1:]], [("sa", "kv", ["A"]), ("sc", "kv2", ["C", "A"])])
    with open_journal(journal) as j:
        assert {a.server for r in j.list_runs() for a in j.actions(r.id)} == {"kv", "kv2"}
    halted = cli("undo", "sa", *flags)
    assert halted.returncode == 1 and "another session wrote this resource" in halted.stdout, halted.stdout + halted.stderr
    assert "kv2.put" in halted.stdout
    assert json.loads(state.read_text())["k0"] == "A"


@pytest.mark.parametrize("back", ["v0", "A"])
def test_redo_halts_when_another_session_wrote_the_resource_back_since_the_undo(tmp_path, back):
    # after sa was undone (k0 = v0), sc wrote C and then `back`: the undo's state (adversarial
    # review 18, F2: the redo found "as the undo left it" and overwrote sc's write unnamed) or
    # sa's own value (review 20, F8: it said "already redone", and undoing sc then wiped it)
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    _sessions(lambda _server: argv, [("sa", "kv", ["A"])])
    assert cli("undo", "sa", *flags).returncode == 0
    _sessions(lambda _server: argv, [("sc", "kv", ["C", back])])
    halted = cli("redo", "sa", *flags)
    assert halted.returncode == 1 and "another session wrote this resource" in halted.stdout, halted.stdout + halted.stderr
    assert "of session s-" in halted.stdout
    assert json.loads(state.read_text())["k0"] == back
    with open_journal(journal) as j:
        first, other = sorted(j.list_runs(), key=lambda r: r.started_at)
        assert [a.status for a in j.actions(first.id)] == ["rolled_back"]  # not marked redone
    # sc's run is what the redo halts on: a prune keeps it (adversarial review 22, F1: pruned,
    # and the redo then overwrote sc's write)
    pruned = cli("prune", other.id[:10], "--yes", *flags)
    assert pruned.returncode == 1 and "prune them together" in pruned.stdout + pruned.stderr, pruned.stdout + pruned.stderr
    if back == "A":
        return
    preview = cli("redo", "sa", "--force", *flags)
    assert preview.returncode == 1 and "of session s-" in preview.stdout, preview.stdout + preview.stderr
    assert json.loads(state.read_text())["k0"] == "v0"
    forced = cli("redo", "sa", "--force", "--yes", *flags)
    assert forced.returncode == 0 and json.loads(state.read_text())["k0"] == "A", forced.stdout + forced.stderr


FILES = """version: 1
servers:
  files: {}
tools:
  - match: "files.read_*"
    class: readonly
  - match: "files.write_file"
    class: reversible
    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, absent_when: ["ENOENT"]}
    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}
"""


def test_another_sessions_write_under_another_spelling_of_the_path_halts_the_undo(tmp_path, fs_server):
    # adversarial review 19, F5: sc wrote root/./a.txt back to sa's value, and undoing sa wiped it unnamed
    from helpers import files_proxy
    root, argv = files_proxy(tmp_path, fs_server, policy=FILES)
    doc = root / "a.txt"
    doc.write_text("O")
    for name, path, values in (("sa", str(doc), ["A"]), ("sc", f"{root}/./a.txt", ["C", "A"])):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            for n, v in enumerate(values, 1):
                assert not s.call(n, "write_file", {"path": path, "content": v}).get("isError")
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    halted = cli("undo", "sa", *flags)
    assert halted.returncode == 1 and "another session wrote this resource" in halted.stdout, halted.stdout + halted.stderr
    assert doc.read_text() == "A"


def test_undoing_one_run_halts_on_a_later_run_of_its_session_that_wrote_the_value_back(tmp_path):
    # adversarial review 19, F4: run 1 wrote A; run 2 of the same session wrote C, then A again;
    # `undo RUN1` found "state matches" and wiped run 2's writes unnamed
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    _sessions(lambda _server: argv, [("one", "kv", ["A"]), ("one", "kv", ["C", "A"])])
    with open_journal(journal) as j:
        first, second = sorted(j.list_runs(), key=lambda r: r.started_at)
    assert first.session_id == second.session_id
    halted = cli("undo", first.id[:10], *flags)
    assert halted.returncode == 1 and "another run of this session wrote this resource" in halted.stdout, \
        halted.stdout + halted.stderr
    assert f"{second.id[:8]}:1 kv.put" in halted.stdout and json.loads(state.read_text())["k0"] == "A"
    # its way on names that run, not the session being undone (adversarial review 20, F11)
    assert f"Undo that run first (`synartesis undo {second.id[:10]}`)" in " ".join(halted.stdout.split())
    whole = cli("undo", "one", *flags)  # the session as a whole: both runs, newest first
    assert whole.returncode == 0 and json.loads(state.read_text())["k0"] == "v0", whole.stdout + whole.stderr


def test_undo_halts_rather_than_bring_back_a_write_an_undo_already_reverted(tmp_path):
    # adversarial review 19, F3: a newer call replaced what an older call left; the older one
    # was reverted first (--force --yes, or its run undone alone); undoing the newer one put
    # back the older call's change and the run read rolled_back
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    _sessions(lambda _server: argv, [("one", "kv", ["A"]), ("one", "kv", ["B"])])
    with open_journal(journal) as j:
        first, second = sorted(j.list_runs(), key=lambda r: r.started_at)
    forced = cli("undo", first.id[:10], "--force", "--yes", *flags)
    assert forced.returncode == 0 and json.loads(state.read_text())["k0"] == "v0", forced.stdout + forced.stderr
    # the newer call's write lands after that (in the review, a call --force stepped over while
    # its server was stopped): the resource is as the newer call left it
    store = json.loads(state.read_text())
    state.write_text(json.dumps({**store, "k0": "B"}, sort_keys=True, indent=1))
    halted = cli("undo", second.id[:10], *flags)
    assert halted.returncode == 1 and "an undo has reverted since" in halted.stdout, halted.stdout + halted.stderr
    assert json.loads(state.read_text())["k0"] == "B"  # A is not brought back
    # nor does a prune of the older run take away what that halt stands on (new user 20, #2)
    pruned = cli("prune", first.id[:10], "--yes", *flags)
    assert pruned.returncode == 1 and "prune them together" in pruned.stdout + pruned.stderr, pruned.stdout + pruned.stderr
    assert cli("undo", second.id[:10], *flags).returncode == 1 and json.loads(state.read_text())["k0"] == "B"
    preview = cli("undo", second.id[:10], "--force", *flags)  # lists it (adversarial review 22, F3: "nothing has drifted")
    assert preview.returncode == 1 and "--force --yes would put it back" in preview.stdout, preview.stdout + preview.stderr
    over = cli("undo", second.id[:10], "--force", "--yes", *flags)
    assert over.returncode == 0 and json.loads(state.read_text())["k0"] == "A", over.stdout + over.stderr


def test_undo_halts_before_sending_anything_when_a_server_an_older_step_needs_cannot_start(tmp_path):
    # adversarial review 19, F16: the newer step was undone, then the undo halted on the older
    # one whose server could not start (and printed the drift menu)
    from helpers import FAKE_SERVER, proxy_argv
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=TWO_NAMES)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    wrapper = tmp_path / "kv2.sh"
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(FAKE_SERVER) + ' "$@"\n')
    wrapper.chmod(0o755)
    older = proxy_argv("kv2", manifest, journal, [str(wrapper), "--state", str(state)])
    _sessions(lambda server: older if server == "kv2" else argv, [("one", "kv2", ["A"]), ("one", "kv", ["B"])])
    wrapper.unlink()  # kv2's launch line no longer starts anything
    halted = cli("undo", "one", *flags)
    assert halted.returncode == 1 and "could not be started, so nothing was sent" in halted.stdout, \
        halted.stdout + halted.stderr
    assert "Three ways on" not in halted.stdout
    assert json.loads(state.read_text())["k0"] == "B"  # the newer step was not undone either


def test_another_sessions_move_onto_the_file_under_another_name_halts_the_undo(tmp_path, fs_server):
    # adversarial review 20, F1: sb (the same server as fb) moved the file away and another file
    # holding the same text onto it; the move has no read, and was compared by identifiers on
    # the server "as named", so undoing sa overwrote the moved-in file unnamed
    from helpers import files_proxy
    rules = FILES.split("tools:\n", 1)[1] + """  - match: "files.move_file"
    class: reversible
    inverse: {tool: files.move_file, args: {source: "$.destination", destination: "$.source"}}
"""
    policy = ("version: 1\nservers:\n  files: {}\n  fb: {}\ntools:\n" + rules + rules.replace("files.", "fb."))
    root, argv = files_proxy(tmp_path, fs_server, policy=policy)
    x, y, z = root / "x.txt", root / "y.txt", root / "z.txt"
    x.write_text("O")
    y.write_text("A")
    at = argv.index("--server") + 1
    as_fb = [*argv[:at], "fb", *argv[at + 1:]]
    with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="sa")) as s:
        s.handshake()
        assert not s.call(1, "write_file", {"path": str(x), "content": "A"}).get("isError")
    with RawSession(as_fb, env=dict(os.environ, SYNARTESIS_SESSION="sb")) as s:
        s.handshake()
        assert not s.call(1, "move_file", {"source": str(x), "destination": str(z)}).get("isError")
        assert not s.call(2, "move_file", {"source": f"{root}/./y.txt", "destination": str(x)}).get("isError")
    flags = ["--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db")]
    halted = cli("undo", "sa", *flags)
    assert halted.returncode == 1 and "another session wrote this resource" in halted.stdout, halted.stdout + halted.stderr
    assert "fb.move_file" in halted.stdout
    assert x.read_text() == "A" and not y.exists() and z.read_text() == "A"
    # the preview its way on names (adversarial review 22, F4: an internal error on a read-less step)
    moved = root / "moved.txt"
    with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="sm")) as s:
        s.handshake()
        assert not s.call(1, "move_file", {"source": str(z), "destination": str(moved)}).get("isError")
    with RawSession(as_fb, env=dict(os.environ, SYNARTESIS_SESSION="sn")) as s:
        s.handshake()
        assert not s.call(1, "write_file", {"path": str(moved), "content": "N"}).get("isError")
    preview = cli("undo", "sm", "--force", *flags)
    assert "internal error" not in preview.stderr and "fb.write_file" in preview.stdout, preview.stdout + preview.stderr


def test_a_halt_on_another_sessions_write_says_when_both_servers_were_given_variables(tmp_path):
    # adversarial review 20, F9: two memory files chosen by MEMORY_FILE_PATH were taken for one
    # resource and the advice was to undo the other session, whose data this undo never touches
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    for name, values, store in (("sa", ["A"], "one"), ("sc", ["C", "A"], "two")):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name, KV_STORE_NAME=store)) as s:
            s.handshake()
            for n, v in enumerate(values, 1):
                assert not s.call(n, "put", {"key": "k0", "value": v}).get("isError")
    halted = cli("undo", "sa", *flags)
    text = " ".join(halted.stdout.split())
    # (the test harness gives its children a home of their own, so HOME and the like are named too)
    given = text.split("Both servers were given ", 1)[1].split(" by their clients", 1)[0] if "Both servers were given " in text else ""
    assert halted.returncode == 1 and "KV_STORE_NAME" in given.split(", "), text
    assert "one" not in given.split(", ") and "two" not in given.split(", ")  # names, never values


def test_another_sessions_write_that_only_mentions_the_name_does_not_halt_the_undo(tmp_path, memory_server):
    # adversarial review 21, F1: B's entity Alice with the observation "Python" halted the undo
    # of A's entity Python (every value of B's arguments counted as a name it touched)
    from helpers import REPO, proxy_argv
    manifest, journal, mem = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "mem.jsonl"
    manifest.write_text((REPO / "policies" / "memory.yaml").read_text())
    env = {**os.environ, "MEMORY_FILE_PATH": str(mem)}
    argv = proxy_argv("memory", manifest, journal, memory_server)
    for name, entity in (("sa", {"name": "Python", "entityType": "language", "observations": []}),
                         ("sb", {"name": "Alice", "entityType": "person", "observations": ["Python"]})):
        with RawSession(argv, env=dict(env, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            assert not s.call(1, "create_entities", {"entities": [entity]}).get("isError")
    done = cli("undo", "sa", "--manifest", str(manifest), "--journal", str(journal), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    graph = mem.read_text()
    assert '"name":"Python"' not in graph.replace(" ", "") and "Alice" in graph


def test_a_redo_after_a_person_typed_the_older_value_again_undoes_cleanly(tmp_path):
    # adversarial review 21, F2: undo B, undo A (the right order), a person types A's value back,
    # redo B, undo B: it halted on "left by an older call that an undo has reverted since"
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    _sessions(lambda _server: argv, [("sa", "kv", ["v1"]), ("sb", "kv", ["v2"])])
    assert cli("undo", "sb", *flags).returncode == 0
    assert cli("undo", "sa", *flags).returncode == 0
    store = json.loads(state.read_text())
    state.write_text(json.dumps({**store, "k0": "v1"}, sort_keys=True, indent=1))  # a person's edit
    assert cli("redo", "sb", *flags).returncode == 0 and json.loads(state.read_text())["k0"] == "v2"
    done = cli("undo", "sb", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(state.read_text())["k0"] == "v1"


def test_replan_after_a_drift_halt_still_will_not_bring_back_an_undone_change(tmp_path):
    # a new user's round 20, #1: T1 wrote v1, T2 v2; T1 was undone with --force --yes (v0); T2's
    # undo halted on drift; the person put v2 back and ran `undo T2 --replan`, as the halt says:
    # it put T1's undone v1 back, rolled_back (the halt had moved T2's row past T1's revert)
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    _sessions(lambda _server: argv, [("t1", "kv", ["v1"]), ("t2", "kv", ["v2"])])
    assert cli("undo", "t1", "--force", "--yes", *flags).returncode == 0
    assert json.loads(state.read_text())["k0"] == "v0"
    drift = cli("undo", "t2", *flags)
    assert drift.returncode == 1 and "drift" in drift.stdout, drift.stdout
    store = json.loads(state.read_text())
    state.write_text(json.dumps({**store, "k0": "v2"}, sort_keys=True, indent=1))  # put back as the run left it
    replan = cli("undo", "t2", "--replan", *flags)
    assert replan.returncode == 1 and "an undo has reverted since" in replan.stdout, replan.stdout + replan.stderr
    assert json.loads(state.read_text())["k0"] == "v2"
