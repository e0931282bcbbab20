#!/usr/bin/env python3
"""Run a Python module as ``python -m MODULE ARGS`` would, then append this process's own CPU
seconds (user + system, every thread; not its children, e.g. the servers an undo starts) to
the file ``$SELFCPU_OUT``, one line per run.

    SELFCPU_OUT=/tmp/cpu.txt python scripts/bench/selfcpu.py synartesis undo RUN …

The drivers use it to measure an undo's CPU per step, which holds under load where wall time
does not. With ``$SELFCPU_TRACE`` set it also writes there, as JSON lines, every request the
undo sent to a server and when it waited for each (``["send", id, server, tool, args]`` and
``["wait", id]``, in the order they happened; the ``initialize`` of each server is left out):
``bench_session_undo.py`` replays exactly those calls, in that order and with that overlap, on
bare servers to measure the servers' own share of a step. Recording costs about a microsecond
a call (a list append). It imports the module from the interpreter it runs on (this folder is first on
``sys.path``, not the checkout), so it times whatever build that interpreter has installed.
"""

import atexit
import os
import resource
import runpy
import sys


_TRACE: list = []


def _trace() -> None:
    """Record the undo's server requests (see the module docstring) by wrapping the pool."""
    from synartesis.undo import servers

    ids = iter(range(1, 1 << 62))

    def begin_read(self, run_id, read, **kw):
        rid = next(ids)
        _TRACE.append(["send", rid, read.get("server"), read.get("tool"), read.get("args")])
        waiting = real_begin(self, run_id, read, **kw)
        waited = []

        def wait():
            if not waited:
                waited.append(1)
                _TRACE.append(["wait", rid])
            return waiting()
        return wait

    def call(self, run_id, server, tool, args, **kw):
        rid = next(ids)
        _TRACE.append(["send", rid, server, tool, args])
        try:
            return real_call(self, run_id, server, tool, args, **kw)
        finally:
            _TRACE.append(["wait", rid])

    def read(self, run_id, read, **kw):
        rid = next(ids)
        _TRACE.append(["send", rid, read.get("server"), read.get("tool"), read.get("args")])
        try:
            return real_read(self, run_id, read, **kw)
        finally:
            _TRACE.append(["wait", rid])

    pool = servers.SpawnedServers
    real_begin, real_call, real_read = pool.begin_read, pool.call, pool.read
    pool.begin_read, pool.call, pool.read = begin_read, call, read


def _write_trace() -> None:
    import json

    with open(os.environ["SELFCPU_TRACE"], "a") as f:
        for event in _TRACE:
            f.write(json.dumps(event) + "\n")


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
    if os.environ.get("SELFCPU_TRACE"):
        _trace()
        atexit.register(_write_trace)
    runpy.run_module(module, run_name="__main__", alter_sys=True)
