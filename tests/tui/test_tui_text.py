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


def test_the_consoles_undo_report_names_calls_still_waiting_for_approval():
    from synartesis.tui.render import undo_report_text
    from synartesis.undo import UndoReport
    report = UndoReport(run="s-1", dry_run=True, status="rolled_back", target="session",
                        waiting=[{"action": "850acced-0000", "seq": 2, "run": "b8d3f7b1-0000", "tool": "crm.send_email"}])
    text = undo_report_text(report).plain
    assert "1 call is still waiting for approval; undo leaves it held. To refuse: synartesis deny 850acced" in text, text


def test_the_consoles_preview_says_what_would_be_left_in_place_in_the_future_tense():
    from synartesis.tui.render import undo_report_text
    from synartesis.undo import UndoReport
    from synartesis.undo.engine import Step
    left = Step(1, "a1", "dirs.create_directory", "permanent", "cannot be undone; left in place")
    preview = undo_report_text(UndoReport(run="r", dry_run=True, status="partial", steps=[left])).plain
    assert "1 action cannot be undone and would be left in place." in preview, preview  # a new user's round 8
    done = undo_report_text(UndoReport(run="r", dry_run=False, status="partial", steps=[left])).plain
    assert "1 action could not be undone and was left in place." in done, done


def test_the_detail_screen_and_pane_spell_out_escapes_in_a_tool_name_note_and_decision(tmp_path):
    # the console's pane and `f` screen printed the tool name, the note (which quotes it: "the
    # server does not list a tool …"), who decided and the denial's reason as they were: an
    # agent's tool name or a teammate's --by could move the cursor or retitle the terminal
    # (adversarial review 31b)
    import json

    from helpers import cli, held_kv_call, open_journal
    from synartesis.services.runs import action_view
    from synartesis.tui.render import action_pane, detail_text

    journal, flags = held_kv_call(tmp_path, "nosuch\x1b[2J")  # not listed: held
    denied = cli("deny", "--all", "--by", "eve\x1b]0;owned\x07", "--reason", "no\x1b[1A\r", *flags)
    assert denied.returncode == 0, denied.stdout + denied.stderr
    j = open_journal(journal)
    try:
        (run,) = j.list_runs()
        (row,) = [a for a in j.actions(run.id) if a.decided_by]
        assert "\x1b" in row.tool + (row.note or "") and "\x1b" in row.decided_by, json.dumps(row.note)
        full = action_view(j, row, full=True)
        texts = [detail_text(full, run).plain, *(t.plain for t in action_pane(action_view(j, row)))]
    finally:
        j.close()
    for text in texts:
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text, text
    assert "eve\\x1b]0;owned\\x07" in texts[0], texts[0]
