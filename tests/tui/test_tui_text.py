"""The console shows what an agent or a server wrote, never obeys it (adversarial review #7)."""
from types import SimpleNamespace

from synartesis.tui.render import preview_text, pretty, short


def test_rows_and_details_spell_out_terminal_escapes_and_bidi_overrides():
    evil = "rm -rf ~\x1b[1A\x1b[2K\r harmless\u202e"
    for shown in (short(evil), short({"content": evil}), pretty(evil), pretty({"content": evil})):
        assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown, shown
    assert short(evil) == "rm -rf ~\\x1b[1A\\x1b[2K harmless\\u202e"  # rows fold whitespace (CR too)
    assert pretty("x\ud800") == "x\\ud800"  # a lone surrogate cannot be written to the terminal


def test_the_held_call_diff_splits_at_newlines_only_and_shows_a_carriage_return():
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-one\n+evil\x1b[2K\r+fine\n"
    preview = SimpleNamespace(production=[], current={"present": True}, diffs=[("content", diff)], note=None)
    plain = preview_text(preview).plain
    assert "+evil\\x1b[2K\\r+fine\n" in plain, plain
