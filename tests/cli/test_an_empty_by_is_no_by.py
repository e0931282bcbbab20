"""A new user's round 31, 9f: `approve --by ""` recorded the OS user, while `history --by ""`
filtered on the empty name and said "nothing was undone, redone, approved or denied". An empty
(or blank) `--by` is the same as none everywhere: decisions and undos record the OS user,
`history` shows everyone's. Real proxy, fake kv server."""

from __future__ import annotations

import json
import os

from helpers import RawSession, cli, held_kv_call, kv_proxy


def test_an_empty_by_means_the_os_user_when_deciding_and_no_filter_in_history(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        assert s.call(1, "delete", {"key": "k0"}).get("isError")  # no rule: held
    env = {**os.environ, "USER": "round31"}
    flags = ["--journal", str(journal), "--manifest", str(manifest)]
    approved = cli("approve", "--all", "--by", " ", "--no-read", *flags, env=env)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    (entry,) = json.loads(cli("history", "--json", *flags, env=env).stdout)
    assert entry["kind"] == "approved" and entry["by"] == "round31", entry
    for blank in ("", "  "):
        listed = cli("history", "--by", blank, *flags, env=env)
        assert listed.returncode == 0 and "approved by round31" in listed.stdout, (blank, listed.stdout)
        assert json.loads(cli("history", "--by", blank, "--json", *flags, env=env).stdout) == [entry]


def test_a_by_with_a_newline_is_shown_on_one_line_by_show(tmp_path):
    # `show` printed the decider's name with its newline raw: a second line of its own making
    # under the call ("fake line at …"); history spelled it \n (adversarial review 31b)
    journal, flags = held_kv_call(tmp_path)
    approved = cli("approve", "--all", "--by", "alice\n   2 ! applied  kv.fake", "--no-read", *flags)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    shown = cli("show", *flags)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    [line] = [x for x in shown.stdout.splitlines() if "approved by" in x]
    assert "alice\\n   2 ! applied  kv.fake at " in line, shown.stdout
    assert not any(x.lstrip().startswith("2 ! applied  kv.fake") for x in shown.stdout.splitlines())
    nothing = cli("history", "--by", "bob\nfake", *flags)
    assert "by bob\\nfake" in nothing.stdout, nothing.stdout
