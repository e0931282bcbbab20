"""Adversarial review, round 6 (low): the start error `check` shows was scrubbed as a whole,
synartesis's own words included, and every env value the entry gave (MODE=server,
MEMORY_FILE_PATH=…) was treated as a secret whose every 6-character run goes: a common word
hid "the server said", a path hid every other path sharing 6 characters with it. Now our
wording is scrubbed of secret values only, the server's stderr of every given value as written,
and of the secret ones (secret names, token shapes) in any spelling."""
from synartesis.services.policy_checks import scrub_start_error

HEAD = "kv failed during initialize: kv closed its output — the server said: "


def test_a_common_word_env_value_does_not_hide_synartesis_own_words():
    shown = scrub_start_error(HEAD + "bad token", ["kv"], {"MODE": "server"})
    assert shown.startswith(HEAD) and shown.endswith("bad token"), shown


def test_a_path_env_value_does_not_hide_other_paths():
    shown = scrub_start_error(HEAD + "cannot open /home/ana/notes/todo.md", ["kv"],
                              {"MEMORY_FILE_PATH": "/home/ana/.mcp/memory.json"})
    assert "/home/ana/notes/todo.md" in shown, shown


def test_a_given_value_is_still_hidden_where_the_server_quotes_it_and_a_token_in_any_spelling():
    token = "sk-live-4f9a1c7e2b99"
    shown = scrub_start_error(HEAD + "no file /home/ana/.mcp/memory.json; key sk-live-4f9a1c7e (cut)", ["kv"],
                              {"MEMORY_FILE_PATH": "/home/ana/.mcp/memory.json", "API_TOKEN": token})
    assert "/home/ana/.mcp/memory.json" not in shown and "4f9a1c" not in shown, shown
