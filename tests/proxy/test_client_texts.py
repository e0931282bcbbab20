"""What the agent reads when synartesis answers instead of the server: a held call and a denied
one, word for word (snapshot-tested; ids, paths and times taken out). The saga report's text is
in test_saga.py."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import FAKE_POLICY, RawSession, cli, kv_proxy, text_of

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _normal(text: str, journal: Path) -> str:
    text = text.replace(str(journal), "JOURNAL")
    text = re.sub(r"\b[0-9a-f]{8}\b", "ACTION", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "TIME", text)
    # however the CLI is reached from here (`synartesis`, or a path to python -m synartesis)
    return re.sub(r"^(\s*)\S.*? approve ACTION", r"\1synartesis approve ACTION", text, flags=re.M)


# kv.put is reversible but held by the policy for a person (what install's drafts write)
GATED_PUT = FAKE_POLICY.replace('  - match: "kv.put"\n    class: reversible\n',
                                '  - match: "kv.put"\n    class: reversible\n    gate: always\n')


def test_the_held_and_denied_texts_the_agent_reads_are_stable(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=GATED_PUT)
    with RawSession(argv) as s:
        s.handshake()
        gated = s.call(3, "put", {"key": "k1", "value": "x"})  # reversible, gate: always
        held = s.call(1, "delete", {"key": "k0"})  # no rule: fail closed
        action = text_of(held).split("Action ")[1].split()[0]
        denied = cli("deny", action, "--by", "ana", "--reason", "keep k0", "--journal", str(journal))
        assert denied.returncode == 0, denied.stderr
        refused = s.call(2, "delete", {"key": "k0"})
        s.close()
    assert held["isError"] and refused["isError"]
    got = "\n---\n".join(_normal(text_of(t), journal) for t in (held, refused, gated)) + "\n"
    expected = (SNAPSHOTS / "held_and_denied.txt").read_text(encoding="utf-8")
    assert got == expected, got


def test_a_held_reversible_call_is_not_described_as_one_that_cannot_be_undone(tmp_path):
    # adversarial review, 2026-12-01: a reversible rule with `gate: always` told the agent "this
    # action cannot be undone"
    manifest, journal, state, argv = kv_proxy(tmp_path, policy=GATED_PUT)
    with RawSession(argv) as s:
        s.handshake()
        held = s.call(1, "put", {"key": "k0", "value": "x"})
    assert "gate: always" in GATED_PUT
    assert held["isError"] and "holding this call" in text_of(held)
    assert "cannot be undone" not in text_of(held), text_of(held)
    assert "synartesis can undo it" in text_of(held)
