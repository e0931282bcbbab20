"""A new user's round 31, 10b: `synartesis proxy --server files -- /nonexistent/bin` exited 1
(halted or refused); a command line that names nothing to run is a configuration error (2),
said in one plain line. Real proxy subprocess."""

from __future__ import annotations


import pytest
from helpers import proxy_argv, run


@pytest.mark.parametrize("command, says", [
    ("/nonexistent/bin", "there is no such file"),
    ("no-such-mcp-server-r31", "not found on PATH"),
])
def test_a_server_command_that_does_not_exist_is_exit_2_with_a_plain_line(tmp_path, command, says):
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text("version: 1\nservers:\n  files: {}\ntools: []\n")
    res = run(proxy_argv("files", manifest, tmp_path / "journal.db", [command]), capture_output=True, text=True, input="",
              timeout=60)
    assert res.returncode == 2, (res.returncode, res.stderr)
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"synartesis: could not start {command}: {says}"), line
    assert "Traceback" not in res.stderr and "[Errno" not in line, line


def test_a_file_that_is_not_executable_is_exit_2_too(tmp_path):
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text("version: 1\nservers:\n  files: {}\ntools: []\n")
    plain = tmp_path / "server.js"
    plain.write_text("// not executable\n")
    res = run(proxy_argv("files", manifest, tmp_path / "journal.db", [str(plain)]), capture_output=True, text=True, input="",
              timeout=60)
    assert res.returncode == 2 and "is not executable" in res.stderr, (res.returncode, res.stderr)


def test_a_script_whose_interpreter_is_gone_names_its_interpreter(tmp_path):
    # a server installed in a venv that was moved or deleted: the script is there, its #! line
    # names a python that is not; "there is no such file" sent the user to look at a file that
    # exists (adversarial review 31b)
    manifest = tmp_path / "synartesis.yaml"
    manifest.write_text("version: 1\nservers:\n  files: {}\ntools: []\n")
    script = tmp_path / "mcp-server-files"
    script.write_text(f"#!{tmp_path}/gone-venv/bin/python3 -u\nprint('hi')\n")
    script.chmod(0o755)
    res = run(proxy_argv("files", manifest, tmp_path / "journal.db", [str(script)]), capture_output=True, text=True, input="",
              timeout=60)
    assert res.returncode == 2, (res.returncode, res.stderr)
    (line,) = res.stderr.splitlines()
    assert f"its #! line names {tmp_path}/gone-venv/bin/python3, which is not there" in line, line
    assert "there is no such file" not in line
