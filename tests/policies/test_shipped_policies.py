"""Every shipped policy parses with the real loader, carries its header, and says what
FINDINGS.md says about its server (issue 5 item 1)."""

from __future__ import annotations

from importlib import resources

import pytest

from synartesis.policy import parse_policy
from synartesis.services.policies import load_known, load_shipped, named_tools, shipped_ids

MINE = ["filesystem", "memory", "git", "github", "sqlite", "time", "fetch", "sequential-thinking", "everything"]

# tools/list of @modelcontextprotocol/server-github 2025.4.8 (shared/servers/github-tools.json)
GITHUB_TOOLS = {
    "create_or_update_file", "search_repositories", "create_repository", "get_file_contents",
    "push_files", "create_issue", "create_pull_request", "fork_repository", "create_branch",
    "list_commits", "list_issues", "update_issue", "add_issue_comment", "search_code",
    "search_issues", "search_users", "get_issue", "get_pull_request", "list_pull_requests",
    "create_pull_request_review", "merge_pull_request", "get_pull_request_files",
    "get_pull_request_status", "update_pull_request_branch", "get_pull_request_comments",
    "get_pull_request_reviews",
}


def _text(pid: str) -> str:
    return (resources.files("synartesis.policies") / f"{pid}.yaml").read_text(encoding="utf-8")


def test_all_mine_are_shipped() -> None:
    assert set(MINE) <= set(shipped_ids())


@pytest.mark.parametrize("pid", MINE)
def test_parses_with_the_loader(pid: str) -> None:
    policy = parse_policy(_text(pid), f"{pid}.yaml")
    assert list(policy.servers) == [pid], "placeholder key must equal the file name"
    assert policy.rules
    assert all(r.match.startswith(pid + ".") for r in policy.rules)


@pytest.mark.parametrize("pid", shipped_ids())
def test_every_shipped_file_parses(pid: str) -> None:
    parse_policy(_text(pid), f"{pid}.yaml")


@pytest.mark.parametrize("pid", MINE)
def test_header_names_version_provenance_and_limits(pid: str) -> None:
    shipped = load_shipped(pid)
    header = "\n".join(shipped.header)
    assert "Checked against:" in header
    assert "Provenance:" in header
    assert "Where it runs out" in header
    assert shipped.provenance in ("live", "documented")
    assert f"Provenance: {shipped.provenance}" in header


def test_provenance_per_policy() -> None:
    assert load_shipped("github").provenance == "documented"
    for pid in MINE:
        if pid != "github":
            assert load_shipped(pid).provenance == "live", pid


def test_known_table_points_at_shipped_files() -> None:
    for entry in load_known():
        load_shipped(entry.id)


def test_filesystem_follows_findings() -> None:
    p = parse_policy(_text("filesystem"), "filesystem.yaml")
    for tool in ("write_file", "edit_file"):
        r = p.rule_for("filesystem", tool, {"path": "x"})
        assert r.cls == "reversible"
        assert (r.snapshot.tool, r.snapshot.args) == ("read_text_file", {"path": "$.path"})
        assert r.snapshot.absent_when == ("ENOENT",)
        assert r.snapshot.refuse_when == ("\ufffd",)
        assert len(r.inverse) == 1
        assert (r.inverse[0].tool, r.inverse[0].args) == ("write_file", {"path": "$.path", "content": "$snapshot.content"})
    assert p.rule_for("filesystem", "edit_file", {"path": "x", "edits": [], "dryRun": True}).cls == "readonly"
    assert p.rule_for("filesystem", "edit_file", {"path": "x", "edits": [], "dryRun": False}).cls == "reversible"
    mv = p.rule_for("filesystem", "move_file", {})
    assert mv.cls == "reversible" and mv.snapshot is None
    assert mv.inverse[0].args == {"source": "$.destination", "destination": "$.source"}
    mk = p.rule_for("filesystem", "create_directory", {})
    assert (mk.cls, mk.gate) == ("irreversible", "always")
    for read in ("read_file", "read_text_file", "read_media_file", "list_directory", "get_file_info"):
        assert p.rule_for("filesystem", read, {}).cls == "readonly"


def test_memory_inverses_come_from_structured_results() -> None:
    p = parse_policy(_text("memory"), "memory.yaml")
    ce = p.rule_for("memory", "create_entities", {})
    assert ce.cls == "compensable"
    assert ce.inverse[0].args == {"entityNames": "$result.entities[].name"}
    cr = p.rule_for("memory", "create_relations", {})
    assert cr.inverse[0].args == {"relations": "$result.relations"}
    de = p.rule_for("memory", "delete_entities", {})
    assert [c.tool for c in de.inverse] == ["create_entities", "create_relations"]
    for gated in ("add_observations", "delete_observations", "delete_relations"):
        r = p.rule_for("memory", gated, {})
        assert (r.cls, r.gate) == ("irreversible", "always"), gated
    header = "\n".join(load_shipped("memory").header)
    assert "MEMORY_FILE_PATH" in header and "add_observations" in header and "delete_observations" in header
    assert p.servers["memory"].env == {"MEMORY_FILE_PATH": "${MEMORY_FILE_PATH}"}


def test_git_has_no_inverse_and_states_the_prose_limit() -> None:
    p = parse_policy(_text("git"), "git.yaml")
    assert all(r.cls in ("readonly", "irreversible") for r in p.rules)
    for gated in ("git_add", "git_reset", "git_commit"):
        assert p.rule_for("git", gated, {}).gate == "always", gated
    assert "prose" in "\n".join(load_shipped("git").header)


def test_sqlite_read_query_is_on_write_with_sql_arg() -> None:
    p = parse_policy(_text("sqlite"), "sqlite.yaml")
    rq = p.rule_for("sqlite", "read_query", {"query": "select 1"})
    assert (rq.cls, rq.gate, rq.sql_arg) == ("irreversible", "on_write", "query")
    for w in ("write_query", "create_table"):
        assert (p.rule_for("sqlite", w, {}).cls, p.rule_for("sqlite", w, {}).gate) == ("irreversible", "always")
    for r in ("list_tables", "describe_table"):
        assert p.rule_for("sqlite", r, {}).cls == "readonly"


def test_everything_holds_get_env() -> None:
    p = parse_policy(_text("everything"), "everything.yaml")
    assert p.rule_for("everything", "get-env", {}).gate == "always"
    assert p.rule_for("everything", "echo", {}).cls == "readonly"


def test_github_names_only_tools_the_server_lists() -> None:
    shipped = load_shipped("github")
    assert set(named_tools(shipped.rules, "github")) <= GITHUB_TOOLS
    p = parse_policy(_text("github"), "github.yaml")
    covered = {t for t in GITHUB_TOOLS if p.rule_for("github", t, {}).matched}
    assert covered == GITHUB_TOOLS
    assert p.servers["github"].provenance == "documented"


def test_synap_holds_log_exchange_and_reads_the_rest() -> None:
    p = parse_policy(_text("synap"), "synap.yaml")
    assert load_shipped("synap").provenance == "documented"
    r = p.rule_for("synap", "log_exchange", {"content": "x"})
    assert r.cls == "irreversible" and r.gate == "always"
    for tool in ("recall_context", "list_recent_memories", "check_memory_status"):
        assert p.rule_for("synap", tool, {}).cls == "readonly"
    header = "\n".join(load_shipped("synap").header)
    assert "Provenance: documented" in header and "Where it runs out" in header


def test_the_readme_opening_names_every_irreversible_call_a_shipped_policy_lets_through() -> None:
    """A new user's finding (round 6): the README's opening said calls that cannot be undone are
    held, while the shipped git policy records `git_create_branch` and `git_checkout` as
    irreversible with `gate: never` (they only add a ref, or switch a branch git will not let
    lose work: holding them would stop an agent for nothing). The opening says what is held."""
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    opening = " ".join(readme.split("## Set up")[0].split())
    through = [(pid, r.match.split(".", 1)[1]) for pid in shipped_ids()
               for r in parse_policy(_text(pid), f"{pid}.yaml").rules if r.cls == "irreversible" and r.gate == "never"]
    assert ("git", "git_create_branch") in through
    for pid, tool in through:
        assert f"`{tool}`" in opening, (pid, tool)
    assert "gate: never" in opening
