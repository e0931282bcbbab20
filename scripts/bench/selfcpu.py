#!/usr/bin/env python3
"""Run a Python module as ``python -m MODULE ARGS`` would, then append this process's own CPU
seconds (user + system, every thread; not its children, e.g. the servers an undo starts) to
the file ``$SELFCPU_OUT``, one line per run.

    SELFCPU_OUT=/tmp/cpu.txt python scripts/bench/selfcpu.py synartesis undo RUN …

The drivers use it to measure an undo's CPU per step, which holds under load where wall time
does not. It imports the module from the interpreter it runs on (this folder is first on
``sys.path``, not the checkout), so it times whatever build that interpreter has installed.
"""

import atexit
import os
import resource
import runpy
import sys


def _report() -> None:
    out = os.environ.get("SELFCPU_OUT")
    if out:
        r = resource.getrusage(resource.RUSAGE_SELF)
        with open(out, "a") as f:
            f.write(f"{r.ru_utime + r.ru_stime:.6f}\n")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: selfcpu.py MODULE [ARGS…]")
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    sys.path[0] = os.getcwd()  # as `python -m` has it (the drivers run from a neutral folder)
    atexit.register(_report)
    runpy.run_module(module, run_name="__main__", alter_sys=True)
