"""The journal's timestamps: ISO-8601 UTC with milliseconds, sorting as text in time order."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from synartesis.journal.rows import now_iso


def _parsed(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)


def test_now_iso_says_utc_now_to_the_millisecond_as_isoformat_does():
    before = datetime.now(timezone.utc).replace(microsecond=0)
    text = now_iso()
    after = datetime.now(timezone.utc)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text), text
    assert before <= _parsed(text) <= after


def test_now_iso_with_an_offset_moves_by_that_many_seconds_and_keeps_the_form():
    ago = _parsed(now_iso(-86400.5))
    now = _parsed(now_iso())
    assert timedelta(seconds=86400.4) < now - ago < timedelta(seconds=86402)
    later = now_iso(3600)
    assert later > now_iso() and later.endswith("Z") and len(later) == len("2026-12-01T07:55:00.123Z")


def test_now_iso_texts_sort_in_time_order_across_a_second():
    texts = [now_iso(k / 10) for k in range(25)]
    assert texts == sorted(texts) and len(set(t[:19] for t in texts)) >= 3
