"""The proxy's usage said the policy defaults to "./synartesis.yaml upward, else
$SYNARTESIS_HOME/synartesis.yaml"; the installed proxy reads only $SYNARTESIS_HOME's (a project
folder cannot swap in its own policy, as the README says). Fresh user round 31c."""

from __future__ import annotations

import subprocess
import sys


def test_the_usage_names_the_policy_the_proxy_reads(tmp_path):
    p = subprocess.run([sys.executable, "-m", "synartesis", "proxy", "--help"], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    text = p.stdout + p.stderr
    [line] = [x for x in text.splitlines() if x.strip().startswith("--manifest")]
    assert "$SYNARTESIS_HOME/synartesis.yaml" in line and "upward" not in line, line
