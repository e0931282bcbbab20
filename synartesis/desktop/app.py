"""The HTTP side: a starlette app over :class:`~synartesis.desktop.window.Window`.

Routes are thin: they parse a request, call the window or a service, and answer JSON. Decisions
and undo go through the same services as the CLI (:mod:`synartesis.services.runs`,
:mod:`synartesis.services.undoing` over :mod:`synartesis.undo.engine`). Every request passes
:class:`GuardMiddleware` first; every response says ``no-store`` and carries a
Content-Security-Policy that allows nothing but this server (no CDN, no inline script).
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from synartesis.desktop.guard import Guard
from synartesis.desktop.journalview import JournalView, ledger
from synartesis.desktop.settings import SettingsError
from synartesis.desktop.window import Window
from synartesis.errors import SynartesisError, UsageError

__all__ = ["build_app", "GuardMiddleware", "STATIC"]

STATIC = Path(__file__).parent / "static"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
_HEADERS = [(b"cache-control", b"no-store"), (b"content-security-policy", CSP.encode()),
            (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
            (b"referrer-policy", b"no-referrer"), (b"cross-origin-opener-policy", b"same-origin"),
            (b"cross-origin-resource-policy", b"same-origin")]


class GuardMiddleware:
    """Refuse (403) what :meth:`Guard.refusal` refuses; trade a valid ``?token=`` for the cookie."""

    def __init__(self, app: Any, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:
            pass
        morsel = cookies.get(self.guard.cookie_name)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        token = (query.get("token") or [None])[0]
        why = self.guard.refusal(headers, morsel.value if morsel else None, token)
        if why is None and scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            # an HTML form on another site can POST without a preflight, but never as JSON
            if not headers.get("content-type", "").startswith("application/json"):
                why = "requests that change anything must be JSON"
        if why is not None:
            resp = PlainTextResponse(f"403 Forbidden: {why}\n", status_code=403)
            return await self._send(resp, scope, receive, send)
        if token is not None and scope["type"] == "http":
            # put the token in a cookie and take it out of the address bar and the history
            resp = RedirectResponse(scope.get("path") or "/", status_code=303)
            resp.set_cookie(self.guard.cookie_name, self.guard.token, httponly=True, samesite="strict", path="/")
            return await self._send(resp, scope, receive, send)
        return await self._send(self.app, scope, receive, send)

    async def _send(self, app: Any, scope: dict, receive: Any, send: Any) -> None:
        started = False

        async def with_headers(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": list(message.get("headers", [])) + _HEADERS}
            await send(message)
        try:
            await app(scope, receive, with_headers)
        except Exception as exc:  # a bug: one JSON log line, never a traceback in the person's terminal
            from synartesis.log import log
            log("error", "the window could not answer a request", path=scope.get("path"), error=f"{type(exc).__name__}: {exc}")
            if not started and scope["type"] == "http":
                await self._send(JSONResponse({"error": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500),
                                 scope, receive, send)


def _err(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _body(request: Request) -> dict:
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError:
        raise UsageError("the request body is not JSON") from None
    except RecursionError:  # nesting deeper than the parser goes: no request of ours looks so
        raise UsageError("the request body is nested too deeply") from None
    if not isinstance(data, dict):
        raise UsageError("the request body must be a JSON object")
    return data


def build_app(window: Window, guard: Guard, on_ready: Any = None) -> Any:
    """The ASGI app (guard middleware around the starlette routes).

    ``on_ready``: called once the window is ready to serve (the CLI prints the URL then).
    """

    def conv_or_404(cid: str):
        conv = window.conversations.get(cid)
        if conv is None:
            raise _NotFound(f"no conversation {cid}")
        return conv

    async def index(request: Request):
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    async def state(request: Request):
        s = window.settings
        return JSONResponse({
            "servers": window.servers(),
            "policy": {"path": str(window.policy_path), "problem": window.policy_problem},
            "journal": str(window.journal_path),
            "by": window.by,
            "profiles": [p.as_json() for p in s.profiles.values()],
            "current": s.current,
            "settingsProblem": s.problem,
            "keys": {pid: window.keys.status(pid).as_json() for pid in s.profiles},
            "keyStorage": window.keys.storage,
            "keyNotice": window.keys.notice,
            "conversations": [c.summary() for c in window.conversations.values()],
        })

    async def new_conversation(request: Request):
        data = await _body(request)
        servers = data.get("servers")
        conv = window.new_conversation(list(servers) if isinstance(servers, list) else None, data.get("profile"))
        return JSONResponse(conv.as_json(), status_code=201)

    async def get_conversation(request: Request):
        conv = conv_or_404(request.path_params["cid"])
        return JSONResponse(conv.as_json())

    async def send_message(request: Request):
        conv = conv_or_404(request.path_params["cid"])
        text = str((await _body(request)).get("text", "")).strip()
        if not text:
            return _err("write something first")
        conv.send(text)
        return JSONResponse({"ok": True}, status_code=202)

    async def stop(request: Request):
        conv = conv_or_404(request.path_params["cid"])
        return JSONResponse({"stopped": conv.stop()})

    async def set_servers(request: Request):
        conv = conv_or_404(request.path_params["cid"])
        wanted = (await _body(request)).get("servers")
        if not isinstance(wanted, list) or not all(isinstance(s, str) for s in wanted):
            return _err("servers must be a list of names")
        available = {s["name"] for s in window.servers() if s["available"]}
        unknown = [s for s in wanted if s not in available]
        if unknown:
            return _err(f"not a server that can be started here: {', '.join(map(str, unknown))}")
        off = [s for s in conv.servers if s not in wanted]
        if off and conv.busy:
            return _err("the model is answering; switch servers off when it is done", 409)
        conv.servers = [s for s in wanted]
        await conv.disconnect(off)
        conv.changed()
        return JSONResponse(conv.as_json())

    async def set_profile(request: Request):
        conv = conv_or_404(request.path_params["cid"])
        pid = (await _body(request)).get("profile")
        if not isinstance(pid, str):
            return _err("profile must be the name of a model profile")
        if pid not in window.settings.profiles:
            return _err(f"unknown model profile {pid!r}")
        conv.profile = pid
        conv.changed()
        return JSONResponse(conv.as_json())

    async def update_profile(request: Request):
        data = await _body(request)
        try:
            p = window.settings.update(request.path_params["pid"], data.get("baseUrl"), data.get("model"))
        except SettingsError as exc:
            return _err(str(exc))
        return JSONResponse(p.as_json())

    async def save_key(request: Request):
        pid = request.path_params["pid"]
        if pid not in window.settings.profiles:
            return _err(f"unknown model profile {pid!r}")
        key = (await _body(request)).get("key")
        if not isinstance(key, str):
            return _err("the key must be text")
        return JSONResponse(window.keys.save(pid, key).as_json())

    async def forget_key(request: Request):
        return JSONResponse(window.keys.forget(request.path_params["pid"]).as_json())

    async def history(request: Request):
        runs = await window.journal.run(JournalView.history)
        for r in runs:
            r["conversation"] = window.conversation_of_run(r["id"])
        return JSONResponse({"runs": runs})

    async def run_detail(request: Request):
        rid = request.path_params["rid"]

        def read(j):
            if j is None:
                raise SynartesisError("there is no journal yet")
            from synartesis.services.runs import run_summary
            run = j.find_run(rid)
            return {"run": run_summary(run), "actions": JournalView.actions_of(j, [run.id])}
        data = await window.journal.run(read)
        data["ledger"] = ledger(data["actions"])
        data["conversation"] = window.conversation_of_run(data["run"]["id"])
        return JSONResponse(data)

    async def gates(request: Request):
        return JSONResponse({"gated": await window.journal.run(JournalView.gated)})

    async def action_detail(request: Request):
        aid = request.path_params["aid"]
        return JSONResponse(await window.journal.run(lambda j: JournalView.detail(j, aid)))

    async def decide(request: Request):
        from synartesis.services.runs import decide as decide_service, pick_gated
        aid = request.path_params["aid"]
        if request.path_params["verb"] not in ("approve", "deny"):
            raise _NotFound(f"no such decision {request.path_params['verb']!r}: approve or deny")
        approve = request.path_params["verb"] == "approve"
        data = await _body(request)
        by = str(data.get("by") or window.by)[:100]
        reason = str(data.get("reason") or "").strip()[:2000] or ("denied in synartesis desktop" if not approve else None)

        def run(j):
            if j is None:
                raise SynartesisError("there is no journal yet")
            return decide_service(j, pick_gated(j, aid, False), approve, by, reason)
        results = await window.journal.run(run)
        window.poke()
        return JSONResponse({"results": [{"id": d.action.id, "ok": d.ok, "message": d.message} for d in results]},
                            status_code=200 if all(d.ok for d in results) else 409)

    def _scope(data: dict) -> tuple[Any, list[str], tuple[str, int] | None]:
        if data.get("conversation") is not None and not isinstance(data["conversation"], str):
            raise UsageError("conversation must be a conversation id")
        conv = window.conversations.get(data["conversation"]) if data.get("conversation") else None
        if conv is not None:
            runs = list(conv.runs)
        elif data.get("run"):
            if not isinstance(data["run"], str):
                raise UsageError("run must be a run id")
            runs = [data["run"]]
        else:
            raise UsageError("say what to undo: a conversation or a run")
        since = None
        given = data.get("since")
        if given:
            if not isinstance(given, dict) or not isinstance(given.get("seq"), int):
                raise UsageError("since needs a run and a seq")
            since = (str(given.get("run")), given["seq"])
        return conv, runs, since

    async def undo(request: Request):
        from synartesis.services.undoing import segments, undo_segments
        data = await _body(request)
        conv, runs, since = _scope(data)
        if not runs:
            return _err("this conversation has not written anything yet")
        if conv is not None:
            if conv.busy:
                return _err("the model is still working in this conversation; wait, or press Stop, then undo", 409)
            await conv.disconnect()  # its runs end, so they can be undone (they reconnect on the next message)
        if window.undo_lock.locked():
            return _err("an undo is already running in this window", 409)
        async with window.undo_lock:
            def acts(j):
                if j is None:
                    raise SynartesisError("there is no journal yet")
                rows = []
                for r in runs:
                    rows.extend(j.actions(j.find_run(r).id))
                return rows
            rows = await window.journal.run(acts)
            segs = segments(rows, since)
            if not segs:
                return JSONResponse({"reports": [], "nothing": True})
            dry = bool(data.get("dryRun"))
            reports = await asyncio.to_thread(
                undo_segments, window.journal_path, window.policy_path, segs, dry_run=dry, by=window.by,
                replan=bool(data.get("replan")), force=bool(data.get("force")), yes=bool(data.get("yes")))
        window.poke()
        return JSONResponse({"reports": [r.as_json() for r in reports], "dryRun": dry})

    async def live(request: Request):
        from synartesis.services.undoing import live_runs
        data = await _body(request)
        _, runs, _ = _scope(data)
        reports = await asyncio.to_thread(live_runs, window.journal_path, window.policy_path, runs)
        return JSONResponse({"reports": [r.as_json() for r in reports]})

    async def events(request: Request):
        return StreamingResponse(window.hub.stream(), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    routes = [
        Route("/", index),
        Route("/api/state", state),
        Route("/api/events", events),
        Route("/api/conversations", new_conversation, methods=["POST"]),
        Route("/api/conversations/{cid}", get_conversation),
        Route("/api/conversations/{cid}/messages", send_message, methods=["POST"]),
        Route("/api/conversations/{cid}/stop", stop, methods=["POST"]),
        Route("/api/conversations/{cid}/servers", set_servers, methods=["PUT"]),
        Route("/api/conversations/{cid}/profile", set_profile, methods=["PUT"]),
        Route("/api/profiles/{pid}", update_profile, methods=["PUT"]),
        Route("/api/keys/{pid}", save_key, methods=["POST"]),
        Route("/api/keys/{pid}", forget_key, methods=["DELETE"]),
        Route("/api/history", history),
        Route("/api/runs/{rid}", run_detail),
        Route("/api/gates", gates),
        Route("/api/actions/{aid}", action_detail),
        Route("/api/actions/{aid}/{verb:str}", decide, methods=["POST"]),
        Route("/api/undo", undo, methods=["POST"]),
        Route("/api/live", live, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]

    @asynccontextmanager
    async def lifespan(app):
        watcher = asyncio.create_task(window.watch_journal())
        if on_ready is not None:
            on_ready()
        try:
            yield
        finally:
            watcher.cancel()
            await window.shutdown()

    async def synartesis_error(request: Request, exc: SynartesisError):
        return _err(exc.message, 409 if exc.exit_code == 1 else 400)

    async def not_found(request: Request, exc: Exception):
        return _err(str(exc), 404)

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={SynartesisError: synartesis_error, _NotFound: not_found})
    app.debug = False
    return GuardMiddleware(app, guard)


class _NotFound(Exception):
    pass
