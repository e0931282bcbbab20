"""The one redaction rule set (issue 9 item 3): a table of argument shapes, hidden and kept.

Each row is (argv as a client config holds it, argv as the policy / journal / diff may show
it). ``M`` is the mark; every hidden row also checks that no secret part survives and that
:func:`secret_parts` names exactly what was hidden.
"""

from __future__ import annotations

import pytest

from synartesis.redact import (DISPLAY_MARK, SECRET_MARK, is_secret_name, looks_like_token, redact_argv,
                               redact_string, redact_text, scrub, secret_parts)

M = SECRET_MARK
GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OPENAI = "sk-proj-" + "Xy12Ab34Cd56Ef78Gh90Ij12Kl34"
ANTHROPIC = "sk-ant-api03-" + "abcDEF123ghiJKL456mnoPQR789stu"
SLACK = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
RANDOM = "q8ZrT2mVx9LbK4wNc7PdJ3hF"  # 24 chars of a random-looking API key, no known prefix
HEX = "3f9a1c0b7e2d4f6a8b0c1d2e3f4a5b6c"  # 32 hex digits
ZAPIER_KEY = "MzQ1NjdhYmMtZGVmMC0xMjM0LTU2NzgtOWFiY2RlZjAxMjM0OjEyMzQ1Ng=="  # base64, a path segment

HIDDEN = [
    # 1-4: secret-named flags, value as the next argument
    (["--token", "abc123"], ["--token", M]),
    (["--api-key", "k-1"], ["--api-key", M]),
    (["--client-secret", "s3cr3t"], ["--client-secret", M]),
    (["--password", "hunter2"], ["--password", M]),
    # 5-8: the short and bare forms the review named
    (["-k", "S1"], ["-k", M]),
    (["--key", "S1"], ["--key", M]),
    (["--pat", "S1"], ["--pat", M]),
    (["--github-pat", "S1"], ["--github-pat", M]),
    # 9-13: --flag=value
    (["--api-key=S1"], [f"--api-key={M}"]),
    (["--token=S1"], [f"--token={M}"]),
    (["--accessToken=S1"], [f"--accessToken={M}"]),
    (["--auth-token", "S1"], ["--auth-token", M]),
    (["--private_key", "S1"], ["--private_key", M]),
    # 14-18: docker / env assignments with a secret-looking name
    (["-e", "API_KEY=S2"], ["-e", f"API_KEY={M}"]),
    (["--env", "GITHUB_TOKEN=S2"], ["--env", f"GITHUB_TOKEN={M}"]),
    (["--env=DB_PASSWORD=S2"], [f"--env=DB_PASSWORD={M}"]),
    (["env", "OPENAI_API_KEY=S2", "npx", "srv"], ["env", f"OPENAI_API_KEY={M}", "npx", "srv"]),
    (["-e", "LOG_LEVEL=debug", "-e", "SLACK_BOT_TOKEN=S2"], ["-e", "LOG_LEVEL=debug", "-e", f"SLACK_BOT_TOKEN={M}"]),
    # 19-23: headers
    (["--header", "X-Api-Key: S3"], ["--header", f"X-Api-Key: {M}"]),
    (["-H", "Authorization: Bearer S3"], ["-H", f"Authorization: Bearer {M}"]),
    (["--header=Authorization: Basic S3"], [f"--header=Authorization: Basic {M}"]),
    (["-H", "X-Custom-Tenant: S3"], ["-H", f"X-Custom-Tenant: {M}"]),
    (["Authorization: token S3"], [f"Authorization: token {M}"]),
    # 24-28: URLs
    (["postgres://alex:S4@db.local:5432/app"], [f"postgres://alex:{M}@db.local:5432/app"]),
    (["https://api.example.com/mcp?api_key=S4&region=eu"], [f"https://api.example.com/mcp?api_key={M}&region=eu"]),
    (["https://example.com/sse?token=S4"], [f"https://example.com/sse?token={M}"]),
    (["--url", "redis://:S4@cache:6379/0"], ["--url", f"redis://:{M}@cache:6379/0"]),
    (["Server=db;Database=app;User Id=sa;Password=S4;"], [f"Server=db;Database=app;User Id=sa;Password={M};"]),
    # 29-36: bare token-shaped positionals
    ([GHP], [M]),
    ([OPENAI], [M]),
    ([ANTHROPIC], [M]),
    ([SLACK], [M]),
    ([AWS], [M]),
    ([JWT], [M]),
    ([RANDOM], [M]),
    ([HEX], [M]),
    # 37-41: mixed and embedded
    (["Bearer S5"], [f"Bearer {M}"]),
    (['{"apiKey": "S5", "region": "eu"}'], [f'{{"apiKey": "{M}", "region": "eu"}}']),
    (["--config", f"token={GHP}"], ["--config", f"token={M}"]),
    (["run", "-i", "--rm", "-e", f"GITHUB_PERSONAL_ACCESS_TOKEN={GHP}", "ghcr.io/github/github-mcp-server"],
     ["run", "-i", "--rm", "-e", f"GITHUB_PERSONAL_ACCESS_TOKEN={M}", "ghcr.io/github/github-mcp-server"]),
    (["--secret", "S6", "--token", "${OK}"], ["--secret", M, "--token", "${OK}"]),
    # 42-47: keys hosted servers put in the URL path or under short query names, and
    # flags named for what they open (adversarial review #5)
    ([f"https://mcp.zapier.com/api/mcp/s/{ZAPIER_KEY}/mcp"], [f"https://mcp.zapier.com/api/mcp/s/{M}/mcp"]),
    (["--url", f"https://server.smithery.ai/@foo/bar/mcp?profile=x&k={HEX}"],
     ["--url", f"https://server.smithery.ai/@foo/bar/mcp?profile=x&k={M}"]),
    ([f"https://hooks.example.com/{RANDOM}?x={RANDOM}"], [f"https://hooks.example.com/{M}?x={M}"]),
    (["--access", "S7"], ["--access", M]),
    (["--db-pass=S7"], [f"--db-pass={M}"]),
    (["-e", "ADMIN_PASS=S7"], ["-e", f"ADMIN_PASS={M}"]),
    # 48-50: a headers helper keeps its program, and hides what it would print (#17)
    (["--headers-helper", "echo '{\"X-H\": \"S8\"}'"], ["--headers-helper", f"echo '{{\"X-H\": \"{M}\"}}'"]),
    (["--headers-helper=get-token --api-key S8"], [f"--headers-helper=get-token --api-key '{M}'"]),
    (["--headers-helper", f"mcp-auth {GHP}"], ["--headers-helper", f"mcp-auth '{M}'"]),
]

KEPT = [
    # references are names, not values
    ["--token", "${GITHUB_TOKEN}"],
    ["--api-key=${env:API_KEY}"],
    ["-e", "API_KEY=${API_KEY}"],
    ["-e", "API_KEY"],
    ["-H", "Authorization: Bearer ${TOKEN}"],
    ["postgres://alex:${PGPASSWORD}@db/app"],
    # paths, words, packages, versions, numbers
    ["-y", "@modelcontextprotocol/server-filesystem", "/home/alex/notes"],
    ["C:\\Users\\alex\\notes", "~/notes", "./data", "../x"],
    ["mcp-server-git", "--repository", "/home/alex/src/app"],
    ["--from=mcp-server-fetch==2025.1.17", "mcp-server-fetch"],
    ["--port", "8080", "--host=127.0.0.1"],
    ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server:v0.4.0"],
    ["image@sha256:" + "a" * 64],
    ["123e4567-e89b-12d3-a456-426614174000"],
    # flags whose value names where a secret is, and switches
    ["--token-file", "/run/secrets/token", "--key-path", "/etc/key.pem"],
    ["--token-env", "GITHUB_TOKEN", "--api-key-id", "abc"],
    ["--no-auth", "/srv/data"],
    ["--credentials", "/home/alex/.config/gcloud/creds.json"],
    # harmless headers, URLs without secrets, ordinary assignments
    ["-H", "Content-Type: application/json"],
    ["https://example.com/mcp?page=2&limit=10"],
    ["https://alex@example.com/repo.git"],
    ["-e", "LOG_LEVEL=debug", "-e", "MAX_TOKENS=4096"],
    # CamelCase and kebab identifiers are not tokens
    ["MyServerName2024Production", "ModelContextProtocol2025Server", "my-server-2024-release-candidate"],
    ["--verbose", "--token", "--debug"],  # a flag after a secret flag is not its value
    # URL paths of words, short query names with ordinary values, access-named settings
    ["https://github.com/modelcontextprotocol/servers/tree/main/src/filesystem", "https://x.dev/v1/mcp?k=2&id=abc"],
    ["--access-level", "read", "--access-mode=ro", "--passthrough", "x"],
    ["--headers-helper", "vault read -field=token secret/mcp", "--headers-helper",
     "printf '{\"Content-Type\": \"application/json\"}'"],
]


@pytest.mark.parametrize(("argv", "shown"), HIDDEN, ids=[f"hidden-{i + 1}" for i in range(len(HIDDEN))])
def test_secret_values_are_hidden_and_the_shape_is_kept(argv: list[str], shown: list[str]) -> None:
    out, hidden = redact_argv(argv)
    assert out == shown
    assert hidden is True
    parts = secret_parts(argv)
    assert parts, "secret_parts names what was hidden"
    for p in parts:
        assert all(p not in s.replace(M, "") for s in out if p not in ("",)), (p, out)


@pytest.mark.parametrize("argv", KEPT, ids=[f"kept-{i + 1}" for i in range(len(KEPT))])
def test_references_paths_and_ordinary_words_are_kept(argv: list[str]) -> None:
    assert redact_argv(argv) == (argv, False)
    assert secret_parts(argv) == []


def test_the_table_has_at_least_forty_shapes() -> None:
    assert len(HIDDEN) + len(KEPT) >= 40 and len(HIDDEN) >= 30


def test_the_mark_can_be_chosen_for_screens() -> None:
    assert redact_argv(["-k", "S1"], DISPLAY_MARK) == (["-k", DISPLAY_MARK], True)


@pytest.mark.parametrize("name", ["API_KEY", "apiKey", "X-Auth-Token", "client_secret", "DB_PASSWORD", "pat",
                                  "--access-key", "Authorization", "SENTRY_DSN", "Cookie"])
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["--token-file", "KEY_PATH", "--no-auth", "--keyring", "LOG_LEVEL", "MAX_TOKENS",
                                  "Content-Type", "PWD", "--api-key-id", "monkey"])
def test_names_that_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_token_shapes() -> None:
    for t in (GHP, OPENAI, ANTHROPIC, SLACK, AWS, JWT, RANDOM, HEX):
        assert looks_like_token(t), t
    for t in ("hello-world", "ModelContextProtocol2025Server", "v1.2.3-beta.4", "node_modules/.bin/server",
              "123e4567-e89b-12d3-a456-426614174000", "2024-01-01T00:00:00Z", "task-1234567890abcdefghijkl"):
        assert not looks_like_token(t), t


def test_scrub_removes_secret_values_from_messages() -> None:
    argv = ["-k", "S1", "-e", "API_KEY=S2secret"]
    msg = "server exited: invalid key S1 (API_KEY=S2secret); see S1x"
    assert scrub(msg, secret_parts(argv)) == "server exited: invalid key *** (API_KEY=***); see S1x"


def test_free_text_backstop_hides_known_tokens_and_url_passwords() -> None:
    line = f'+  # old token {GHP} at https://u:pw@h/x and "apiKey": "zz"'
    out = redact_text(line)
    assert GHP not in out and ":pw@" not in out and '"zz"' not in out
    assert redact_string("${X}") == "${X}"


def test_flags_that_name_variables_keep_their_values_and_docker_env_does_not():
    from synartesis.redact import redact_argv
    argv = ["remote-relay", "--url", "https://x/mcp", "--header-env", "Authorization=SYNARTESIS_HEADER_1",
            "--bearer-env", "API_TOKEN", "--url-env", "SYNARTESIS_URL"]
    assert redact_argv(argv) == (argv, False)
    shown, hidden = redact_argv(["docker", "run", "--env", "API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123"])
    assert hidden and "sk-abc" not in " ".join(shown)


def test_scrub_pieces_hides_a_secret_cut_wrapped_or_encoded():
    """Adversarial review, round 5: a server's stderr quoted a rejected token cut at a line's
    end, over two lines, URL-encoded or JSON-escaped; every run of 6+ characters of it goes."""
    from synartesis.redact import scrub_pieces
    secret = 'sk-live/4f9a+1c7e "2b'
    for text in ("key=sk-live%2F4f9a%2B1c7e%20%222b -> 401", '{"token": "sk-live/4f9a+1c7e \\"2b"}',
                 "token sk-live/4\nf9a+1c7e \"2b", "x" * 20 + " sk-live/4f9a+1"):
        shown = scrub_pieces(text, [secret], mark="***")
        assert "4f9a" not in shown and "1c7e" not in shown and "***" in shown, (text, shown)
    assert scrub_pieces("nothing secret here", [secret], mark="***") == "nothing secret here"
