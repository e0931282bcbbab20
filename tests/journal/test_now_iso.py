"""The journal's timestamps (formatted once a second) read as datetime's ISO-8601 form."""

import re
from datetime import datetime, timedelta, timezone

from synartesis.journal.rows import now_iso


def test_a_journal_time_is_utc_iso_8601_with_milliseconds_and_its_offset_applied():
    for offset in (0.0, -3600.0, 86400.5, -0.25):
        before = datetime.now(timezone.utc) + timedelta(seconds=offset)
        text = now_iso(offset)
        after = datetime.now(timezone.utc) + timedelta(seconds=offset)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
        got = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
        assert before - timedelta(milliseconds=1) <= got <= after
