"""`printable`: what the CLI does to text an agent or a server controls before a person reads it."""
import pytest

from synartesis.printable import printable


@pytest.mark.parametrize("raw, shown", [
    ("plain text, Σημειώσεις «ναι» 日本語 🙂", "plain text, Σημειώσεις «ναι» 日本語 🙂"),
    ("evil\x1b[1A\x1b[2K\r+harmless", "evil\\x1b[1A\\x1b[2K\\r+harmless"),
    ("bell\x07 del\x7f csi\x9b", "bell\\x07 del\\x7f csi\\x9b"),
    ("abc\u202edcba\u2066x\u2069", "abc\\u202edcba\\u2066x\\u2069"),
    ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
    ("lone x\ud800y", "lone x\\ud800y"),
    ("line\u2028sep", "line\\u2028sep"),
    ("two\nlines\tand a tab", "two\\nlines\\tand a tab"),
])
def test_control_format_and_surrogate_characters_are_spelled_out(raw, shown):
    assert printable(raw) == shown
    printable(raw).encode("utf-8")  # never a UnicodeEncodeError


def test_newlines_and_tabs_can_be_kept_for_text_printed_over_several_lines():
    assert printable("a\nb\tc\rd", keep="\n\t") == "a\nb\tc\\rd"
