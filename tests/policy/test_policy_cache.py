"""The compiled policy cache: a hit gives the very policy the loader gives, without PyYAML; any
change to the file (even one that keeps its size and mtime) misses; a cache someone else could
have written is not trusted; a malformed policy is never cached. Plus the post_state key."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from synartesis.errors import PolicyError
from synartesis.policy import parse_policy
from synartesis.policy.cache import cache_path, load_policy_cached

POLICY = """version: 1
servers:
  files: {command: node, args: ["x.js", "/tmp"], env: {K: "${K}"}, pins: {}}
tools:
  - match: "files.read_*"
    class: readonly
  - match: "files.edit_file"
    when: {dryRun: true}
    class: readonly
  - match: "files.write_file"
    class: reversible
    snapshot: {tool: files.read_text_file, args: {path: "$.path"}, absent_when: ["ENOENT"], refuse_when: ["\\ufffd"]}
    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content", "$odd": ["$$x"]}}
    post_state: {content: "$.content"}
"""


def _warm_load_imports_yaml(path, cache_dir) -> bool:
    code = ("import sys; from synartesis.policy.cache import load_policy_cached; "
            f"load_policy_cached({str(path)!r}, {str(cache_dir)!r}); print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip() == "True"


def test_a_cache_hit_is_the_policy_the_loader_gives_without_yaml(tmp_path):
    path, cache = tmp_path / "synartesis.yaml", tmp_path / "j"
    path.write_text(POLICY)
    first = load_policy_cached(path, cache)
    where = cache_path(path, cache)
    assert os.stat(where).st_mode & 0o777 == 0o600 and os.stat(cache).st_mode & 0o777 == 0o700
    assert load_policy_cached(path, cache) == first == parse_policy(POLICY, str(path))
    assert not _warm_load_imports_yaml(path, cache)


def test_an_edit_that_keeps_size_and_mtime_still_misses(tmp_path):
    path, cache = tmp_path / "synartesis.yaml", tmp_path / "j"
    path.write_text(POLICY)
    load_policy_cached(path, cache)
    st = os.stat(path)
    path.write_text(POLICY.replace('["ENOENT"]', '["ENOENX"]'))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size
    assert load_policy_cached(path, cache).rules[2].snapshot.absent_when == ("ENOENX",)


def test_a_cache_others_could_write_or_that_was_damaged_is_not_used(tmp_path):
    path, cache = tmp_path / "synartesis.yaml", tmp_path / "j"
    path.write_text(POLICY)
    load_policy_cached(path, cache)
    where = cache_path(path, cache)
    os.chmod(where, 0o666)
    assert _warm_load_imports_yaml(path, cache)  # not trusted: parsed again, and rewritten 0600
    assert os.stat(where).st_mode & 0o777 == 0o600
    data = json.loads(where.read_text())
    data["policy"]["f"]["rules"] = {"$tuple": [{"$dc": "NoSuchType", "f": {}}]}
    where.write_text(json.dumps(data))
    os.chmod(where, 0o600)
    assert load_policy_cached(path, cache) == parse_policy(POLICY, str(path))


def test_a_malformed_policy_is_never_cached(tmp_path):
    path, cache = tmp_path / "synartesis.yaml", tmp_path / "j"
    path.write_text(POLICY + "  - match: files.x\n    clas: readonly\n")
    for _ in range(2):
        with pytest.raises(PolicyError) as info:
            load_policy_cached(path, cache)
        assert f"{path}:" in str(info.value) and "clas" in str(info.value)
    assert not cache_path(path, cache).exists()


@pytest.mark.parametrize("rule, where, words", [
    ('  - match: "files.read_x"\n    class: readonly\n    post_state: "$.a"\n', "17:17", "needs a snapshot or a verify"),
    ('  - match: "files.make_x"\n    class: compensable\n'
     '    inverse: {tool: files.write_file, args: {path: "$.path", content: ""}}\n'
     '    verify: {tool: files.read_text_file, args: {path: "$.path"}}\n'
     '    post_state: {content: "$snapshot.content"}\n', "19:27", "$snapshot"),
    ('  - match: "files.write_x"\n    class: reversible\n'
     '    snapshot: {tool: files.read_text_file, args: {path: "$.path"}}\n'
     '    inverse: {tool: files.write_file, args: {path: "$.path", content: "$snapshot.content"}}\n'
     '    post_state: ""\n', "19:17", "must be a reference"),
])
def test_a_bad_post_state_names_file_line_and_column(tmp_path, rule, where, words):
    text = POLICY + rule
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "p.yaml")
    assert str(info.value).startswith(f"p.yaml:{where}:") and words in str(info.value)
