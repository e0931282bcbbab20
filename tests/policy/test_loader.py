"""Every validation rule of the policy loader names FILE:LINE:COL and what to change."""

from __future__ import annotations

import pytest

from synartesis.errors import PolicyError
from synartesis.policy import load_policy, parse_policy

HEAD = "version: 1\nservers:\n  fs:\n    command: node\n  db: {}\ntools:\n"


def _err(text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "p.yaml")
    return info.value


CASES = [
    # (name, policy text, line, col, words in the message)
    ("yaml syntax", "version: 1\nservers: [\n", 3, 1, "YAML syntax"),
    ("not a mapping", "- 1\n", 1, 1, "must be a mapping"),
    ("unknown top key", "version: 1\nservers: {fs: {}}\nrules: []\n", 3, 1, "unknown key 'rules'"),
    ("missing version", "servers: {fs: {}}\n", 1, 1, "version is required"),
    ("wrong version", "version: 2\nservers: {fs: {}}\n", 1, 10, "version must be 1"),
    ("missing servers", "version: 1\n", 1, 1, "servers is required"),
    ("empty servers", "version: 1\nservers: {}\n", 2, 10, "at least one server"),
    ("bad server name", "version: 1\nservers:\n  a.b: {}\n", 3, 3, "may not be empty or contain"),
    ("unknown server key", "version: 1\nservers:\n  fs:\n    comand: x\n", 4, 5, "unknown key 'comand'"),
    ("args not strings", "version: 1\nservers:\n  fs:\n    args: [1]\n", 4, 11, "args must be a list of strings"),
    ("env not string", "version: 1\nservers:\n  fs:\n    env: {A: 1}\n", 4, 14, "env.A must be a string"),
    ("bad provenance", "version: 1\nservers:\n  fs:\n    provenance: maybe\n", 4, 17, "provenance must be live or documented"),
    ("bad pin", "version: 1\nservers:\n  fs:\n    pins: {x: abc}\n", 4, 15, "sha256:"),
    ("duplicate key", "version: 1\nservers:\n  fs: {}\n  fs: {}\n", 4, 3, "duplicate key 'fs'"),
    ("tools not a list", HEAD.replace("tools:\n", "tools: {}\n"), 6, 8, "tools must be a list"),
    ("rule unknown key", HEAD + "  - match: fs.a\n    clas: readonly\n", 8, 5, "unknown key 'clas'"),
    ("rule missing match", HEAD + "  - class: readonly\n", 7, 5, "needs match"),
    ("rule missing class", HEAD + "  - match: fs.a\n", 7, 5, "needs class"),
    ("bad class", HEAD + "  - match: fs.a\n    class: maybe\n", 8, 12, "class must be one of"),
    ("bad gate", HEAD + "  - match: fs.a\n    class: readonly\n    gate: sometimes\n", 9, 11, "gate must be one of"),
    ("unqualified match", HEAD + "  - match: write\n    class: readonly\n", 7, 12, "must be qualified as server.tool"),
    ("undeclared server", HEAD + "  - match: web.get\n    class: readonly\n", 7, 12, "names server web, which is not declared"),
    ("duplicate match", HEAD + "  - match: fs.a\n    class: readonly\n  - match: fs.a\n    class: readonly\n", 9, 12,
     "duplicate match pattern fs.a; it is already declared at tools[0]"),
    ("reversible without inverse", HEAD + "  - match: fs.a\n    class: reversible\n", 8, 12, "must declare an inverse"),
    ("compensable without inverse", HEAD + "  - match: fs.a\n    class: compensable\n", 8, 12, "must declare an inverse"),
    ("readonly with inverse", HEAD + "  - match: fs.a\n    class: readonly\n    inverse: {tool: fs.b}\n", 9, 14,
     "must not declare an inverse"),
    ("irreversible with inverse", HEAD + "  - match: fs.a\n    class: irreversible\n    inverse: {tool: fs.b}\n", 9, 14,
     "must not declare an inverse"),
    ("readonly with snapshot", HEAD + "  - match: fs.a\n    class: readonly\n    snapshot: {tool: fs.b}\n", 9, 15,
     "must not declare a snapshot"),
    ("snapshot ref without snapshot", HEAD + "  - match: fs.a\n    class: reversible\n    inverse:\n      tool: fs.b\n"
     "      args: {x: \"$snapshot.x\"}\n", 11, 17, "this inverse reads $snapshot"),
    ("unqualified call tool", HEAD + "  - match: fs.a\n    class: compensable\n    inverse: {tool: b}\n", 9, 21,
     "b must be qualified"),
    ("wildcard call server", HEAD + "  - match: fs.a\n    class: compensable\n    inverse: {tool: \"*.b\"}\n", 9, 21,
     "must name one server"),
    ("undeclared call server", HEAD + "  - match: fs.a\n    class: compensable\n    inverse: {tool: web.b}\n", 9, 21,
     "names server web"),
    ("result in snapshot", HEAD + "  - match: fs.a\n    class: reversible\n    snapshot: {tool: fs.r, args: {p: \"$result.x\"}}\n"
     "    inverse: {tool: fs.w}\n", 9, 38, "uses $result, which is not available here"),
    ("unknown namespace", HEAD + "  - match: fs.a\n    class: compensable\n    inverse: {tool: fs.b, args: {x: \"$upstream.id\"}}\n",
     9, 38, "$upstream is not a namespace"),
    ("absent_when on inverse", HEAD + "  - match: fs.a\n    class: compensable\n    inverse: {tool: fs.b, absent_when: x}\n",
     9, 40, "absent_when belongs on a read"),
    ("on_absent on inverse", HEAD + "  - match: fs.a\n    class: compensable\n    inverse: {tool: fs.b, on_absent: send}\n",
     9, 38, "on_absent belongs on a snapshot"),
    ("on_absent unknown", HEAD + "  - match: fs.a\n    class: reversible\n    snapshot: {tool: fs.r, on_absent: create}\n"
     "    inverse: {tool: fs.b}\n", 9, 39, "on_absent must be one of hold, send"),
    ("unordered on inverse", HEAD + "  - match: fs.a\n    class: compensable\n    inverse: {tool: fs.b, unordered: true}\n",
     9, 38, "unordered belongs on a read"),
    ("unordered not a bool", HEAD + "  - match: fs.a\n    class: reversible\n    snapshot: {tool: fs.r, unordered: yes please}\n"
     "    inverse: {tool: fs.b}\n", 9, 39, "unordered must be true or false"),
    ("hold_reason not a string", HEAD + "  - match: fs.a\n    class: irreversible\n    hold_reason: 3\n", 9, 18,
     "hold_reason must be a sentence"),
    ("hold_reason on a rule that holds nothing", HEAD + "  - match: fs.a\n    class: readonly\n    hold_reason: x\n", 9, 18,
     "this rule holds none"),
    ("on_absent on the rule", HEAD + "  - match: fs.a\n    class: reversible\n    on_absent: send\n"
     "    snapshot: {tool: fs.r}\n    inverse: {tool: fs.b}\n", 9, 5, "on_absent belongs on a read: the rule's snapshot"),
    ("merge key", "version: 1\nservers:\n  a: {command: x}\n<<: {tools: []}\n", 4, 1,
     "YAML merge keys (<<) are not supported"),
    ("verify on reversible", HEAD + "  - match: fs.a\n    class: reversible\n    inverse: {tool: fs.b}\n    verify: {tool: fs.c}\n",
     10, 13, "verify is for compensable tools"),
    ("verify with snapshot", HEAD + "  - match: fs.a\n    class: compensable\n    snapshot: {tool: fs.r}\n    inverse: {tool: fs.b}\n"
     "    verify: {tool: fs.c}\n", 11, 13, "no pre-read exists"),
    ("empty when", HEAD + "  - match: fs.a\n    class: readonly\n    when: {}\n", 9, 11, "when must name at least one argument"),
    ("sql_arg without on_write", HEAD + "  - match: db.q\n    class: irreversible\n    sql_arg: query\n", 9, 14,
     "sql_arg only means something with gate: on_write"),
    ("empty inverse list", HEAD + "  - match: fs.a\n    class: compensable\n    inverse: []\n", 9, 14, "at least one call"),
    ("empty document", "", 1, 1, "the policy is empty"),
    ("production_patterns not a list", "version: 1\nservers: {fs: {}}\nproduction_patterns: prod\n", 3, 22,
     "production_patterns must be a list of patterns"),
    ("production pattern empty", "version: 1\nservers: {fs: {}}\nproduction_patterns: [prod, \" \"]\n", 3, 29,
     "production_patterns[1] must be a non-empty string"),
    ("production pattern not a string", "version: 1\nservers: {fs: {}}\nproduction_patterns:\n  - prod\n  - 3\n",
     5, 5, "production_patterns[1] must be a non-empty string"),
    ("production patterns null", "version: 1\nservers: {fs: {}}\nproduction_patterns:\n", 3, 21,
     "write [] to flag nothing"),
]


@pytest.mark.parametrize("name,text,line,col,words", CASES, ids=[c[0] for c in CASES])
def test_each_validation_rule_names_file_line_col(name, text, line, col, words):
    err = _err(text)
    assert (err.file, err.line, err.col) == ("p.yaml", line, col), str(err)
    assert words in str(err)
    assert str(err).startswith(f"p.yaml:{line}:{col}: ")


def test_a_valid_policy_with_every_feature_loads(tmp_path):
    p = tmp_path / "synartesis.yaml"
    p.write_text(HEAD + """  - match: "fs.read_*"
    class: readonly
  - match: fs.edit_file
    when: {dryRun: true}
    class: readonly
  - match: fs.edit_file
    class: reversible
    snapshot: {tool: fs.read_text_file, args: {path: "$.path"}, absent_when: ENOENT, refuse_when: ["\\ufffd"],
               on_absent: send}
    inverse: {tool: fs.write_file, args: {path: "$.path", content: "$snapshot.content"}}
  - match: fs.delete_many
    class: compensable
    snapshot: {tool: fs.read_many, args: {names: "$.names"}}
    inverse:
      - {tool: fs.create, args: {items: "$snapshot.items"}}
      - {tool: fs.link, args: {links: "$snapshot.links"}}
  - match: fs.create
    class: compensable
    inverse: {tool: fs.delete, args: {id: "$result.id"}}
    verify: {tool: fs.get, args: {id: "$result.id"}, absent_when: [gone]}
  - match: db.query
    class: irreversible
    gate: on_write
    sql_arg: sql
""")
    pol = load_policy(p)
    assert pol.rule_for("fs", "edit_file", {"dryRun": True}).cls == "readonly"
    assert pol.rule_for("fs", "edit_file", {"dryRun": False}).cls == "reversible"
    assert pol.rule_for("fs", "edit_file", {}).snapshot.refuse_when == ("\ufffd",)
    assert pol.rule_for("fs", "edit_file", {}).snapshot.on_absent == "send"
    assert pol.rule_for("fs", "edit_file", {}).snapshot.absent_when == ("ENOENT",)
    assert len(pol.rule_for("fs", "delete_many", {}).inverse) == 2
    assert pol.rule_for("db", "query", {}).gate == "on_write"
    assert pol.rule_for("fs", "create", {}).verify.tool == "get"


def test_gate_defaults_and_fail_closed():
    pol = parse_policy(HEAD + "  - match: fs.a\n    class: irreversible\n  - match: fs.b\n    class: readonly\n"
                       "  - match: fs.n\n    class: irreversible\n    gate: never\n")
    assert pol.rule_for("fs", "a").gate == "always"
    assert pol.rule_for("fs", "b").gate == "never"
    assert pol.rule_for("fs", "n").gate == "never"
    unknown = pol.rule_for("fs", "zzz")
    assert (unknown.cls, unknown.gate, unknown.matched) == ("irreversible", "always", False)
    other = pol.rule_for("web", "get")
    assert other.cls == "irreversible" and "not in the policy" in other.note


def test_specificity_is_independent_of_order():
    pol = parse_policy(HEAD + "  - match: \"fs.*\"\n    class: irreversible\n  - match: \"fs.read_*\"\n    class: readonly\n"
                       "  - match: fs.read_secret\n    class: irreversible\n")
    assert pol.rule_for("fs", "read_x").cls == "readonly"
    assert pol.rule_for("fs", "read_secret").cls == "irreversible"
    assert pol.rule_for("fs", "write").cls == "irreversible"
    assert not pol.rule_for("fs", "read_a.b").matched  # * never crosses a dot


def test_missing_file_is_a_policy_error(tmp_path):
    with pytest.raises(PolicyError) as info:
        load_policy(tmp_path / "nope.yaml")
    assert "there is no policy at" in str(info.value) and info.value.exit_code == 2


@pytest.mark.parametrize("value,hit", [
    ("prod", "prod"), ("PROD-db", "prod"), ("db.prod.internal", "prod"), ("/srv/prod/app", "prod"), ("prod1", "prod"),
    ("production", "production"), ("eu-production-2", "production"), ("live", "live"), ("Live_DB", "live"),
    ("product", None), ("reproduce", None), ("deliver", None), ("olive", None), ("alive", None), ("staging", None),
    ("", None),
])
def test_the_default_production_patterns_match_words_not_any_substring(value, hit):
    pol = parse_policy("version: 1\nservers: {fs: {}}\n")
    assert pol.production_patterns == ("prod", "production", "live")
    assert pol.production_match(value) == hit


def test_production_patterns_are_globs_or_words_and_cover_the_server_and_every_argument():
    pol = parse_policy("version: 1\nservers: {fs: {}}\nproduction_patterns: [\"*.corp.example\", main, \"db-?\"]\n")
    assert pol.production_patterns == ("*.corp.example", "main", "db-?")
    assert pol.production_match("api.corp.example") == "*.corp.example"
    assert pol.production_match("corp.example.org") is None  # a glob is over the whole value
    assert pol.production_match("db-1") == "db-?" and pol.production_match("db-12") is None
    assert pol.production_match("prod") is None  # the defaults are replaced, not extended
    hits = pol.production_hits("main-files", {"path": "/tmp/x", "targets": [{"host": "db-3"}, "domain"], "n": 5})
    assert [(h.where, h.value, h.pattern) for h in hits] == [
        ("server", "main-files", "main"), ("targets[0].host", "db-3", "db-?")]
    assert pol.production_match({"deep": [{"x": "api.corp.example"}]}) == "*.corp.example"
    none = parse_policy("version: 1\nservers: {fs: {}}\nproduction_patterns: []\n")
    assert none.production_patterns == () and none.production_hits("prod", {"a": "live"}) == []


def test_hold_reason_loses_a_closing_full_stop_the_held_text_adds():
    # new user round 17: "…, because it prints the environment.. It was not sent."
    text = HEAD + "  - match: fs.a\n    class: irreversible\n    hold_reason: it prints the environment. \n"
    [rule] = [r for r in parse_policy(text, "p.yaml").rules if r.match == "fs.a"]
    assert rule.hold_reason == "it prints the environment"
