"""A PostgreSQL journal that cannot be reached: every call held with the journal named (never
a password), nothing sent, never a silent local fallback; a database dropped mid-session."""

from __future__ import annotations

import os

import pgkit
from helpers import FS_POLICY, cli, proxy_argv


def _setup(tmp_path, fs_server, journal):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a0")
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text(FS_POLICY)
    return root, manifest, proxy_argv("files", manifest, journal, [*fs_server, str(root)])


def test_a_journal_down_at_start_holds_every_call_and_names_it_without_the_password(tmp_path, fs_server):
    port = pgkit.free_port()  # nothing listens there
    url = f"postgresql://ana:hunter2-literal@127.0.0.1:{port}/team"
    root, manifest, argv = _setup(tmp_path, fs_server, url)
    proc_env = dict(os.environ)
    results = pgkit.agent_calls(argv, [("write_file", {"path": str(root / "a.txt"), "content": "agent"}),
                                       ("read_text_file", {"path": str(root / "a.txt")})], env=proc_env)
    assert all(err for err, _ in results)
    for _, text in results:
        assert f"postgresql://ana@127.0.0.1:{port}/team" in text and "holding this call" in text
        assert "hunter2" not in text
    assert (root / "a.txt").read_text() == "a0"
    assert not list(tmp_path.rglob("journal.db")) and not list(tmp_path.rglob("spool"))  # never a silent fallback
    # the CLI says the same, and exits 1 (not a usage error): the journal is just not there
    out = cli("list", "--journal", url)
    assert out.returncode == 1 and f"127.0.0.1:{port}/team" in out.stderr and "hunter2" not in out.stdout + out.stderr


def test_a_password_reference_is_read_from_the_environment_and_a_missing_one_is_named(tmp_path, pg_server,
                                                                                      monkeypatch):
    name = pg_server.new_database()
    try:
        url = f"postgresql://{pgkit.SUPERUSER}:${{SYN_TEST_PW}}@127.0.0.1:{pg_server.port}/{name}"
        missing = cli("list", "--journal", url)
        assert missing.returncode == 2 and "${SYN_TEST_PW}" in missing.stderr
        env = dict(os.environ, SYN_TEST_PW=pgkit.PASSWORD)
        empty = cli("list", "--journal", url, env=env)
        assert empty.returncode == 2 and "no journal" in empty.stderr and pgkit.PASSWORD not in empty.stderr
        # a literal password on the command line is used to connect, and shown nowhere
        literal = f"postgresql://{pgkit.SUPERUSER}:{pgkit.PASSWORD}@127.0.0.1:{pg_server.port}/{name}"
        used = cli("list", "--journal", literal)
        assert used.returncode == 2 and "no journal" in used.stderr and pgkit.PASSWORD not in used.stdout + used.stderr
    finally:
        pg_server.drop_database(name)


def test_a_database_dropped_mid_session_sends_nothing_it_cannot_journal(tmp_path, fs_server, pg_server, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", pgkit.PASSWORD)
    name = pg_server.new_database()
    url = pg_server.url(name)
    root, manifest, argv = _setup(tmp_path, fs_server, url)

    import asyncio

    from helpers import sdk_session, text_of

    async def go():
        async with sdk_session(argv) as s:
            first = await s.call_tool("write_file", {"path": str(root / "a.txt"), "content": "one"})
            pg_server.drop_database(name)  # terminates the proxy's connections too
            second = await s.call_tool("write_file", {"path": str(root / "a.txt"), "content": "two"})
            return first, second

    first, second = asyncio.run(go())
    assert not first.is_error and (root / "a.txt").read_text() == "one"
    assert second.is_error and "holding this call" in text_of(second) and name in text_of(second)
    assert (root / "a.txt").read_text() == "one"  # the second write was never sent
