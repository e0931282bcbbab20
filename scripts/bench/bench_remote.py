#!/usr/bin/env python3
"""Remote-server benchmarks (issue 12), every figure as a ratio to a baseline measured in the
same run:

1. **Bridge overhead**: per-call p50 of ``echo`` on server-everything over Streamable HTTP,
   through ``synartesis proxy --url`` (the mcp SDK's stdio client → the bridge → HTTP) against
   the SDK's own Streamable HTTP client talking to the server directly. Round-robin: both
   sessions open at once, each rep a burst of ``--burst`` calls per variant in alternating
   order; the ratio and the added milliseconds are taken per rep, the median over reps is
   reported. Goal: at most +0.5 ms or 1.3x, whichever is larger.
2. **serve**: ``--sessions`` SDK Streamable HTTP clients at once against ``synartesis serve``
   (one server-everything stdio process and engine per session), ``--calls`` calls of ``echo``
   each: calls/s overall, p50 and p99 per call; beside it the same clients straight at
   server-everything's own Streamable HTTP (one Node process for all of them), for scale.

    python scripts/bench/bench_remote.py [--quick] [--out FILE]

Needs ``.servers/node_modules`` (server-everything). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
EVERYTHING = REPO / ".servers" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
POLICY = "version: 1\nservers:\n  ev:{server}\ntools:\n  - match: \"ev.*\"\n    class: readonly\n    gate: never\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(port)


def _syn(*args: str) -> list[str]:
    return [sys.executable, "-m", "synartesis", *args]


async def _timed_calls(session, n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        await session.call_tool("echo", {"message": f"m{i}"})
        out.append((time.perf_counter() - t) * 1000)
    return out


async def bridge_overhead(url: str, policy: Path, journal: Path, reps: int, burst: int) -> dict:
    import httpx2
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    argv = _syn("proxy", "--server", "ev", "--manifest", str(policy), "--journal", str(journal), "--url", url)
    client = httpx2.AsyncClient(timeout=60)
    async with client, streamable_http_client(url, http_client=client) as (r1, w1), \
            stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))) as (r2, w2):
        async with ClientSession(r1, w1) as direct, ClientSession(r2, w2) as bridged:
            await direct.initialize()
            await bridged.initialize()
            for s in (direct, bridged):  # warm both paths
                await _timed_calls(s, 20)
            ratios, added, d50s, b50s = [], [], [], []
            for rep in range(reps):
                order = (direct, bridged) if rep % 2 == 0 else (bridged, direct)
                got = {}
                for s in order:
                    got[id(s)] = statistics.median(await _timed_calls(s, burst))
                d, b = got[id(direct)], got[id(bridged)]
                d50s.append(d)
                b50s.append(b)
                ratios.append(b / d)
                added.append(b - d)
    return {"direct_p50_ms": statistics.median(d50s), "bridge_p50_ms": statistics.median(b50s),
            "ratio": statistics.median(ratios), "added_ms": statistics.median(added), "reps": reps, "burst": burst}


async def _many(url: str, token: str | None, sessions: int, calls: int) -> dict:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    ready = asyncio.Event()
    opened = 0
    lat: list[float] = []

    async def one() -> None:
        nonlocal opened
        headers = {"authorization": f"Bearer {token}"} if token else {}
        client = httpx2.AsyncClient(headers=headers, timeout=120)
        async with client, streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("echo", {"message": "warm"})
                opened += 1
                if opened == sessions:
                    ready.set()
                await ready.wait()
                lat.extend(await _timed_calls(session, calls))

    tasks = [asyncio.ensure_future(one()) for _ in range(sessions)]
    await ready.wait()
    t0 = time.perf_counter()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    lat.sort()
    return {"calls": len(lat), "calls_per_s": len(lat) / wall, "p50_ms": statistics.median(lat),
            "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))], "sessions": sessions}


def serve_throughput(tmp: Path, sessions: int, calls: int, direct_url: str) -> dict:
    policy = tmp / "serve.yaml"
    policy.write_text(POLICY.format(server=f"\n    command: node\n    args: [{json.dumps(str(EVERYTHING))}, stdio]"),
                      encoding="utf-8")
    env = {**os.environ, "SYNARTESIS_HOME": str(tmp / "home"), "NO_COLOR": "1"}
    token = subprocess.run(_syn("serve", "--show-token"), env=env, capture_output=True, text=True,
                           check=True).stdout.strip()
    proc = subprocess.Popen(_syn("serve", "--port", "0", "--manifest", str(policy), "--journal", str(tmp / "s.db"),
                                 "--idle-timeout", "600"), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        base = None
        while base is None:
            line = proc.stdout.readline().decode()
            if not line:
                raise RuntimeError("serve did not start")
            m = re.search(r"(http://\S+?)/servers/ev/mcp", line)
            base = m.group(1) if m else None
        served = asyncio.run(_many(f"{base}/servers/ev/mcp", token, sessions, calls))
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    direct = asyncio.run(_many(direct_url, None, sessions, calls))
    return {"serve": served, "direct": direct}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small samples (a smoke run)")
    parser.add_argument("--out", type=Path, default=None, help="write the raw results as JSON here")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--calls", type=int, default=None)
    args = parser.parse_args()
    reps = args.reps or (5 if args.quick else 21)
    calls = args.calls or (5 if args.quick else 25)
    port = _free_port()
    server = subprocess.Popen(["node", str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    results: dict = {}
    try:
        _wait_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            policy = tmp / "bridge.yaml"
            policy.write_text(POLICY.format(server=" {}"), encoding="utf-8")
            os.environ.setdefault("SYNARTESIS_HOME", str(tmp / "home"))
            results["bridge"] = asyncio.run(bridge_overhead(url, policy, tmp / "b.db", reps, args.burst))
            results["serve"] = serve_throughput(tmp, args.sessions, calls, url)
    finally:
        server.terminate()
        server.wait(10)
    b, s = results["bridge"], results["serve"]
    goal = max(b["direct_p50_ms"] + 0.5, b["direct_p50_ms"] * 1.3)
    print("| measure | baseline | synartesis | ratio / added | goal | met? |")
    print("|---|---|---|---|---|---|")
    print(f"| bridge `echo` p50 (SDK stdio client → bridge → HTTP) vs SDK HTTP client direct | "
          f"{b['direct_p50_ms']:.2f} ms | {b['bridge_p50_ms']:.2f} ms | {b['ratio']:.2f}× / "
          f"+{b['added_ms']:.2f} ms | ≤ {goal:.2f} ms (+0.5 ms or 1.3×) | "
          f"{'yes' if b['bridge_p50_ms'] <= goal else 'no'} |")
    print(f"| serve, {s['serve']['sessions']} sessions × {calls} `echo` calls: calls/s | "
          f"{s['direct']['calls_per_s']:.0f} (server's own HTTP) | {s['serve']['calls_per_s']:.0f} | "
          f"{s['serve']['calls_per_s'] / s['direct']['calls_per_s']:.2f}× | — | — |")
    print(f"| serve, per call p50 / p99 | {s['direct']['p50_ms']:.1f} / {s['direct']['p99_ms']:.1f} ms | "
          f"{s['serve']['p50_ms']:.1f} / {s['serve']['p99_ms']:.1f} ms | — | — | — |")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
