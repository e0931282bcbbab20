"""What the agent reads when synartesis answers instead of the server: a held call and a denied
one, word for word (snapshot-tested; ids, paths and times taken out). The saga report's text is
in test_saga.py."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import RawSession, cli, kv_proxy, text_of

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _normal(text: str, journal: Path) -> str:
    text = text.replace(str(journal), "JOURNAL")
    text = re.sub(r"\b[0-9a-f]{8}\b", "ACTION", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "TIME", text)
    # however the CLI is reached from here (`synartesis`, or a path to python -m synartesis)
    return re.sub(r"^(\s*)\S.*? approve ACTION", r"\1synartesis approve ACTION", text, flags=re.M)


def test_the_held_and_denied_texts_the_agent_reads_are_stable(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    with RawSession(argv) as s:
        s.handshake()
        held = s.call(1, "delete", {"key": "k0"})  # no rule: fail closed
        action = text_of(held).split("Action ")[1].split()[0]
        denied = cli("deny", action, "--by", "ana", "--reason", "keep k0", "--journal", str(journal))
        assert denied.returncode == 0, denied.stderr
        refused = s.call(2, "delete", {"key": "k0"})
        s.close()
    assert held["isError"] and refused["isError"]
    got = _normal(text_of(held), journal) + "\n---\n" + _normal(text_of(refused), journal) + "\n"
    expected = (SNAPSHOTS / "held_and_denied.txt").read_text(encoding="utf-8")
    assert got == expected, got
