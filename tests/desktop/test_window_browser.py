"""A real browser (Playwright driving Debian's chromium, headless) against
``synartesis desktop --no-browser``, a scripted OpenAI-compatible model that streams real-format
tool calls, and the real filesystem server behind the real proxy.

The script a person would follow: ask → the model overwrites a file (card: reversible, prior
captured) → creates a directory (card held, with its reason) → Approve → the retry goes through
once → Undo → the plan is shown → Confirm → the file is byte-identical to before, and the ledger
the page shows equals what ``synartesis show --json`` counts. Screenshots (light, dark, narrow)
are saved as test artifacts (``$SYNARTESIS_ARTIFACTS``, default ``test-artifacts/`` in the repo).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from desktopkit import FS_ENTRY, REPO, Desktop, ScriptedModel, tool_messages, write_fs_policy
from helpers import cli

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
ARTIFACTS = Path(os.environ.get("SYNARTESIS_ARTIFACTS") or REPO / "test-artifacts") / "desktop"


@pytest.fixture
def browser_page(tmp_path):
    """A headless chromium page (1280×800) in a fresh profile; closed in the finaliser."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/test does it)")
    from playwright.sync_api import sync_playwright
    pw = sync_playwright().start()
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp_path)
    ctx = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                                                viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(("http://127.0.0.1", "data:")) else None)
    page.errors, page.outside = errors, outside  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        ctx.close()
        pw.stop()


def _use_model(page, model: ScriptedModel) -> None:
    """In the settings: a custom profile pointed at the scripted model, saved; closed again."""
    from playwright.sync_api import expect

    page.click("#open-settings")
    page.select_option("#profile-select", "custom")
    page.fill("#profile-url", model.base)
    page.fill("#profile-model", "scripted")
    page.click("#save-settings")
    expect(page.locator("#key-status")).to_contain_text("saved")
    page.click("#settings button[value=close]")


def _ledger_from_show(cwd: Path) -> dict:
    """The ledger counted from `synartesis show --json`, independently of the window's code."""
    out = json.loads(cli("show", "--json", cwd=cwd).stdout)
    acts = out["actions"]
    carriers = {a["usedBy"] for a in acts if a.get("usedBy")}
    held = [a for a in acts if a["id"] not in carriers and (a["decidedBy"] or a["status"] in ("gated", "denied"))]
    return {"calls": len(acts),
            "reversibleCaptured": sum(a["class"] == "reversible" and a["prior"] == "captured" for a in acts),
            "compensable": sum(a["class"] == "compensable" for a in acts),
            "held": len(held), "approved": sum(a["status"] not in ("gated", "denied") for a in held),
            "undone": sum(a["status"] == "rolled_back" for a in acts)}


def test_a_person_approves_a_held_call_and_undoes_the_conversation_in_the_browser(tmp_path, fake_home, browser_page):
    from playwright.sync_api import expect

    if not FS_ENTRY.exists():
        pytest.fail(f"{FS_ENTRY} is missing: run npm ci --prefix .servers first")
    root = Path(tempfile.mkdtemp(prefix="notes-"))  # a short path, for a readable screenshot
    notes = root / "notes.txt"
    before = "buy milk\r\nçà et là ✓\n".encode()
    notes.write_bytes(before)
    write_fs_policy(fake_home, root)
    model = ScriptedModel([
        {"text": "I'll rewrite your notes first.",
         "tool_calls": [{"name": "write_file", "arguments": {"path": str(notes), "content": "buy oat milk\n"}}]},
        {"text": "Now the archive folder.",
         "tool_calls": [{"name": "create_directory", "arguments": {"path": str(root / "archive")}}]},
        {"text": "Done: your notes say oat milk, and archive/ exists."},
    ])
    desk = Desktop(cwd=tmp_path)
    page = browser_page
    try:
        page.goto(desk.url)
        page.wait_for_selector("body[data-ready=true]")
        assert desk.token not in page.url  # traded for the cookie, gone from the address bar
        expect(page.locator("#key-notice")).to_contain_text("in memory for this window only")  # no keychain here

        _use_model(page, model)

        page.click("#new-conversation")
        page.fill("#composer-text", "Rewrite my notes to say oat milk, and make an archive folder.")
        page.keyboard.press("Enter")

        write = page.locator('.card[data-tool="files.write_file"]')
        expect(write.locator(".card-class")).to_have_text("reversible", timeout=60_000)
        expect(write.locator(".card-prior")).to_have_text("prior captured")
        expect(write.locator(".card-status")).to_have_text("applied", timeout=30_000)

        mkdir = page.locator('.card[data-tool="files.create_directory"]')
        expect(mkdir.locator(".card-decide")).to_be_visible(timeout=60_000)
        expect(mkdir.locator(".card-class")).to_have_text("irreversible")
        expect(mkdir.locator(".card-reason")).to_contain_text("cannot be undone")
        expect(page.locator('[data-ledger="waiting"]')).to_have_text("1")
        assert not (root / "archive").exists()  # held: nothing was sent
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "window-held-light.png"))

        mkdir.locator(".approve").click()
        expect(mkdir.locator(".card-status")).to_have_text("applied", timeout=60_000)
        expect(mkdir.locator(".card-reason")).to_contain_text("Approved by")
        expect(page.locator("#transcript .msg.assistant").last).to_contain_text("archive/ exists", timeout=30_000)
        assert (root / "archive").is_dir()

        # the retry went through exactly once, and the model was told the real results
        shown = json.loads(cli("show", "--json", cwd=tmp_path).stdout)["actions"]
        mk = [a for a in shown if a["tool"] == "create_directory"]
        assert [(a["status"], bool(a["decidedBy"])) for a in mk] == [("applied", True)]
        results = tool_messages(model.requests[-1])
        assert "Successfully wrote" in results[0] and "Successfully created directory" in results[1]
        assert not any("holding this call" in r for r in results)

        write.locator("summary").click()
        expect(write.locator(".card-detail-body")).to_contain_text("buy milk")  # the snapshot, from the journal
        page.screenshot(path=str(ARTIFACTS / "window-light.png"))

        page.click("#undo-conversation")
        dialog = page.locator("#undo-dialog")
        expect(dialog).to_have_attribute("data-phase", "plan", timeout=60_000)
        expect(dialog).to_contain_text("would call files.write_file")
        expect(dialog).to_contain_text("permanent")  # the approved mkdir cannot be undone, and says so
        assert notes.read_bytes() != before  # the plan changed nothing
        page.click("#confirm-undo")
        expect(dialog).to_have_attribute("data-phase", "done", timeout=60_000)
        expect(dialog).to_contain_text("restored (verified)")
        assert notes.read_bytes() == before
        page.keyboard.press("Escape")

        expect(write.locator(".card-status")).to_have_text("undone", timeout=30_000)
        want = _ledger_from_show(tmp_path)
        assert want == {"calls": 2, "reversibleCaptured": 1, "compensable": 0, "held": 1, "approved": 1, "undone": 1}
        for key, value in want.items():
            expect(page.locator(f'[data-ledger="{key}"]')).to_have_text(str(value))

        page.click("#theme-toggle")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        page.screenshot(path=str(ARTIFACTS / "window-dark.png"))
        page.set_viewport_size({"width": 420, "height": 860})
        page.screenshot(path=str(ARTIFACTS / "window-narrow.png"), full_page=True)
        if os.environ.get("SYNARTESIS_UPDATE_SCREENSHOT"):
            shutil.copy(ARTIFACTS / "window-held-light.png", REPO / "docs" / "desktop.png")
        assert not page.errors, page.errors
        assert not page.outside, page.outside  # nothing was loaded from the network
    finally:
        code, err = desk.stop()
        model.close()
        shutil.rmtree(root, ignore_errors=True)
    assert "Traceback" not in err, err


def test_an_undo_that_halts_on_a_persons_edit_offers_the_three_ways_and_force_overwrites(tmp_path, fake_home, browser_page):
    """The halt path in the browser (stop 20 left the dialog's wording untested): the plan says
    what the undo *would* do, the real undo what it did, and force overwrites the edit."""
    from playwright.sync_api import expect

    root = Path(tempfile.mkdtemp(prefix="notes-"))
    notes = root / "notes.txt"
    notes.write_bytes(b"buy milk\n")
    write_fs_policy(fake_home, root)
    model = ScriptedModel([
        {"text": "Rewriting.", "tool_calls": [{"name": "write_file", "arguments": {"path": str(notes), "content": "buy oat milk\n"}}]},
        {"text": "Done."},
    ])
    desk = Desktop(cwd=tmp_path)
    page = browser_page
    try:
        page.goto(desk.url)
        page.wait_for_selector("body[data-ready=true]")
        _use_model(page, model)
        page.click("#new-conversation")
        page.fill("#composer-text", "Rewrite my notes.")
        page.keyboard.press("Enter")
        write = page.locator('.card[data-tool="files.write_file"]')
        expect(write.locator(".card-status")).to_have_text("applied", timeout=60_000)
        expect(page.locator("#transcript .msg.assistant").last).to_contain_text("Done.", timeout=30_000)
        notes.write_bytes(b"buy oat milk\nand bread (a person's edit)\n")

        page.click("#undo-conversation")
        dialog = page.locator("#undo-dialog")
        expect(dialog).to_have_attribute("data-phase", "plan", timeout=60_000)
        expect(dialog.locator(".ways")).to_contain_text(
            "The undo would halt at sequence 1: drift detected. It would touch nothing older. Three ways on:")
        expect(dialog.locator(".ways")).to_contain_text("put the resource back the way the run left it, then Replan;")
        dialog.get_by_role("button", name="Replan").click()
        expect(dialog).to_have_attribute("data-phase", "halted", timeout=60_000)
        expect(dialog.locator(".ways")).to_contain_text("Halted at sequence 1: drift detected. Nothing older was touched.")
        assert b"a person's edit" in notes.read_bytes()  # a halt changes nothing
        dialog.get_by_role("button", name="Preview force").click()
        expect(dialog).to_have_attribute("data-phase", "force-preview", timeout=60_000)
        expect(dialog).to_contain_text("would overwrite 1 drifted resource(s) shown above. Nothing was changed.")
        assert b"a person's edit" in notes.read_bytes()
        dialog.get_by_role("button", name="Overwrite (force)").click()
        expect(dialog).to_have_attribute("data-phase", "done", timeout=60_000)
        assert notes.read_bytes() == b"buy milk\n"
        assert not page.errors, page.errors
    finally:
        code, err = desk.stop()
        model.close()
        shutil.rmtree(root, ignore_errors=True)
    assert "Traceback" not in err, err
