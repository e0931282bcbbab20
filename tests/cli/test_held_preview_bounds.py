"""The preview of a held call stays readable however big the call is (adversarial review,
2026-12-01: a 3 MB held write_file made `gates` run 74 s and print 10.5 MB)."""
import random
import string

from helpers import GATED_FS_POLICY, RawSession, cli, files_proxy


def _text(rnd: random.Random, n: int) -> str:
    return "".join(rnd.choices(string.ascii_letters + "\n", k=n))


def test_the_preview_of_a_big_held_write_is_bounded_and_says_what_it_left_out(tmp_path, fs_server):
    rnd = random.Random(7)
    root, argv = files_proxy(tmp_path, fs_server, GATED_FS_POLICY)
    (root / "big.txt").write_text(_text(rnd, 400_000))
    with RawSession(argv) as s:
        s.handshake()
        s.call(1, "write_file", {"path": str(root / "big.txt"), "content": _text(rnd, 400_000)})
    r = cli("gates", "--manifest", str(tmp_path / "synartesis.yaml"), "--journal", str(tmp_path / "j.db"))
    assert r.returncode == 0, r.stderr
    assert len(r.stdout) < 100_000, len(r.stdout)
    assert "more characters (--json shows them all)" in r.stdout
    assert "more lines of this diff" in r.stdout
    assert "were not compared" in r.stdout
