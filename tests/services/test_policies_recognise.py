"""Recognition (issue 5 item 3): policies/known.yaml maps a server entry to a shipped policy by
its command line (npx/uvx/node/python/docker, @version suffixes, local paths) and serverInfo."""

from __future__ import annotations

import pytest

from synartesis.services.policies import (
    load_known,
    recognise,
    recognise_command,
    recognise_server_info,
    shipped_ids,
)

NM = "/home/alex/.npm/_npx/abc/node_modules"
FORMS = {
    "filesystem": [
        ("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/home/alex/notes"]),
        ("npx", ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/tmp"]),
        ("node", [f"{NM}/@modelcontextprotocol/server-filesystem/dist/index.js", "."]),
        ("docker", ["run", "-i", "--rm", "--mount", "type=bind,src=/x,dst=/projects", "mcp/filesystem:latest", "/projects"]),
        ("cmd", ["/c", "npx", "-y", "@modelcontextprotocol/server-filesystem@latest", "C:\\Users\\alex"]),
        ("bunx", ["@modelcontextprotocol/server-filesystem", "/srv"]),
        ("node", ["/home/alex/src/servers/src/filesystem/dist/index.js", "/srv"]),
        ("C:\\Program Files\\nodejs\\node.exe",
         ["C:\\Users\\a\\AppData\\Roaming\\npm\\node_modules\\@modelcontextprotocol\\server-filesystem\\dist\\index.js"]),
    ],
    "memory": [
        ("npx", ["-y", "@modelcontextprotocol/server-memory"]),
        ("npx", ["@modelcontextprotocol/server-memory@2025.9.25"]),
        ("node", [f"{NM}/@modelcontextprotocol/server-memory/dist/index.js"]),
        ("docker", ["run", "-i", "-v", "claude-memory:/app/dist", "--rm", "docker.io/mcp/memory"]),
        ("pnpm", ["dlx", "@modelcontextprotocol/server-memory"]),
    ],
    "git": [
        ("uvx", ["mcp-server-git", "--repository", "/home/alex/code/app"]),
        ("uvx", ["--from", "mcp-server-git==2026.10.19", "mcp-server-git"]),
        ("uvx", ["--from=mcp-server-git", "mcp-server-git"]),
        ("python", ["-m", "mcp_server_git", "--repository", "."]),
        ("/home/alex/.venv/bin/python3", ["-m", "mcp_server_git"]),
        ("/home/alex/.local/bin/mcp-server-git", []),
        ("docker", ["run", "--rm", "-i", "mcp/git"]),
        ("pipx", ["run", "mcp-server-git"]),
    ],
    "github": [
        ("npx", ["-y", "@modelcontextprotocol/server-github"]),
        ("github-mcp-server", ["stdio"]),
        ("docker", ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"]),
        ("/usr/local/bin/github-mcp-server", ["stdio", "--toolsets", "repos"]),
    ],
    "sqlite": [
        ("uvx", ["mcp-server-sqlite", "--db-path", "~/test.db"]),
        ("uv", ["--directory", "/x/servers/src/sqlite", "run", "mcp-server-sqlite", "--db-path", "d.db"]),
        ("/opt/venv/bin/mcp-server-sqlite", ["--db-path", "d.db"]),
        ("docker", ["run", "--rm", "-i", "-v", "mcp-test:/mcp", "mcp/sqlite", "--db-path", "/mcp/test.db"]),
    ],
    "time": [
        ("uvx", ["mcp-server-time"]),
        ("uvx", ["mcp-server-time@2026.10.19", "--local-timezone", "Europe/Athens"]),
        ("python", ["-m", "mcp_server_time"]),
        ("docker", ["run", "-i", "--rm", "-e", "LOCAL_TIMEZONE", "mcp/time"]),
    ],
    "fetch": [
        ("uvx", ["mcp-server-fetch"]),
        ("python3", ["-m", "mcp_server_fetch", "--ignore-robots-txt"]),
        ("docker", ["run", "-i", "--rm", "mcp/fetch:2026.10.24"]),
        ("pip", ["run", "mcp-server-fetch[extra]>=2025.1"]),
    ],
    "sequential-thinking": [
        ("npx", ["-y", "@modelcontextprotocol/server-sequential-thinking"]),
        ("docker", ["run", "--rm", "-i", "mcp/sequentialthinking"]),
        ("node", [f"{NM}/@modelcontextprotocol/server-sequential-thinking/dist/index.js"]),
    ],
    "everything": [
        ("npx", ["-y", "@modelcontextprotocol/server-everything", "stdio"]),
        ("npx", ["@modelcontextprotocol/server-everything@2026.8.31"]),
        ("node", [f"{NM}/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]),
    ],
    "crm": [
        ("python3", ["-m", "synartesis.demo.crm_server", "--state", "crm.json"]),
        ("/tmp/venv/bin/python", ["-m", "synartesis.demo.crm_server"]),
        ("python", ["/work/main/synartesis/demo/crm_server.py"]),
    ],
}


@pytest.mark.parametrize("policy_id,command,args",
                         [(pid, c, a) for pid, forms in FORMS.items() for c, a in forms])
def test_command_line_forms(policy_id: str, command: str, args: list[str]) -> None:
    assert recognise(command, args) == policy_id


# policies known only by the URL of their hosted form
URL_FORMS = {
    "synap": ["https://mcp.synap.ai/mcp", "https://synap.ai/mcp/", "https://api.synap.ai/v1/mcp?x=1"],
}


def test_every_known_policy_has_three_forms_and_a_file() -> None:
    ids = {e.id for e in load_known()}
    assert ids == set(FORMS) | set(URL_FORMS), "a known.yaml entry without recognition tests (or the reverse)"
    for pid, forms in {**FORMS, **URL_FORMS}.items():
        assert len(forms) >= 3, pid
    from synartesis.services.policies import recognise_url
    for pid, urls in URL_FORMS.items():
        assert all(recognise_url(u) == pid for u in urls), pid
    assert ids <= set(shipped_ids()), "known.yaml names a policy that is not shipped"


@pytest.mark.parametrize("name,policy_id", [
    ("secure-filesystem-server", "filesystem"), ("memory-server", "memory"), ("mcp-git", "git"),
    ("mcp-time", "time"), ("mcp-fetch", "fetch"), ("mcp-servers/everything", "everything"),
    ("sequential-thinking-server", "sequential-thinking"), ("github-mcp-server", "github"),
    ("sqlite", "sqlite"), ("toy-crm", "crm"), ("MCP-GIT", "git"),
])
def test_server_info_names(name: str, policy_id: str) -> None:
    assert recognise_server_info(name) == policy_id
    # a wrapper script says nothing on its command line; the handshake recognises it
    assert recognise("/home/alex/bin/run-it.sh", [], name) == policy_id


@pytest.mark.parametrize("command,args", [
    ("npx", ["-y", "some-other-mcp-server"]),
    ("npx", ["-y", "@acme/server-github-enterprise"]),
    ("uvx", ["mcp-server-gitlab"]),
    ("node", ["/home/alex/server-filesystem-fork/index.js"]),   # not the package's path
    ("python", ["-m", "mcp_server_git_extra"]),
    ("", []),
    ("docker", ["run", "mcp/filesystem-extended"]),
])
def test_lookalikes_are_not_recognised(command: str, args: list[str]) -> None:
    assert recognise_command(command, args) is None


def test_github_is_not_read_as_git() -> None:
    assert recognise("npx", ["-y", "@modelcontextprotocol/server-github"]) == "github"
    assert recognise("uvx", ["mcp-server-git"]) == "git"


def test_first_token_wins_over_a_directory_argument() -> None:
    # the allowed directory happens to be called like another server
    assert recognise("npx", ["-y", "@modelcontextprotocol/server-filesystem",
                             "/home/alex/mcp-server-git"]) == "filesystem"


def test_command_line_and_server_info_must_agree() -> None:
    assert recognise("uvx", ["mcp-server-git"], "mcp-git") == "git"
    # says git on the command line, filesystem in the handshake: a wrapper we cannot vouch for
    assert recognise("uvx", ["mcp-server-git"], "secure-filesystem-server") is None
    # an unknown serverInfo name does not veto the command line (names change between releases)
    assert recognise("uvx", ["mcp-server-git"], "git-server-v2") == "git"
    assert recognise("./wrapper", [], "something-else") is None


def test_remote_entries_are_recognised_by_their_url_exactly() -> None:
    from synartesis.services.policies import recognise_url
    assert recognise_url("https://api.githubcopilot.com/mcp/") == "github"
    assert recognise_url("https://API.githubcopilot.com:443/mcp/x?y=1") == "github"
    assert recognise_url("https://user:tok@api.githubcopilot.com/mcp") == "github"
    assert recognise_url("https://api.githubcopilot.com/mcpx") is None  # a prefix only at a "/" boundary
    assert recognise_url("https://evil-api.githubcopilot.com/mcp") is None
    assert recognise_url("https://api.githubcopilot.com.evil.example/mcp") is None
    assert recognise_url("https://mcp.synap.ai/mcp") == "synap"
    assert recognise_url("https://synap.ai/api/mcp") == "synap"
    assert recognise_url("https://notsynap.ai/mcp") is None
    assert recognise_url("https://${HOST}/mcp") is None
    assert recognise_url("not a url") is None and recognise_url("") is None
