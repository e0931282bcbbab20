"""Events are packed with a copy of one primed compressor per level (rows._packer): the bytes
must be those a fresh compressor gives, and read back to the same text, at every level and in
any order (a copy must not carry one event's stream into the next)."""

import zlib

from hypothesis import given, settings, strategies as st

from synartesis.journal.rows import _EVENT_DICT, _EVENT_PACK_MIN, event_text, packed_event


def _fresh(text: str, level: int) -> "str | bytes":
    if len(text) < _EVENT_PACK_MIN:  # stored as it is (a found case: 15 zeros pack smaller)
        return text
    z = zlib.compressobj(level, zlib.DEFLATED, 12, 4, zdict=_EVENT_DICT)
    packed = z.compress(text.encode("utf-8")) + z.flush()
    return packed if len(packed) < len(text) else text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=0, max_size=3000), st.sampled_from([1, 6, 9])), min_size=1, max_size=5))
def test_packed_event_is_what_a_fresh_compressor_gives(events):
    for text, level in events:
        packed = packed_event(text, level)
        assert packed == _fresh(text, level)
        assert event_text(packed) == text


def test_an_action_state_packs_and_reads_back():
    text = '{"args":"={\\"path\\":\\"/tmp/a\\"}","class":"reversible","status":"rolled_back"}' * 8
    first = packed_event(text)
    assert isinstance(first, bytes) and packed_event(text) == first == _fresh(text, 9)
    assert event_text(first) == text
