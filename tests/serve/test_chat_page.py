"""The chat page of ``holodeck serve --protocol rest`` (issue 46, item D) in a real headless
Chromium (Debian's package, driven by Playwright): a clear message while the first ingest
runs, then a question typed and sent with Enter, the answer streamed in, the tool call and
its sources shown, a source opened to its passage with location and section, Escape back.
Screenshots go to ``.artifacts/`` (ignored by git) for a person or CI to look at.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fake_openai import text, tool_calls
from rest_helpers import GatedFakeOpenAI, RestServer, make_model_project

playwright = pytest.importorskip("playwright.sync_api", reason="the test extra installs it")

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / ".artifacts"
#: Generous for a loaded machine: a whole answer, an ingest.
WAIT_MS = 60_000


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("no chromium on PATH: `make test` installs it (apt-get install -y chromium)")
    return found


def test_the_page_streams_an_answer_and_opens_its_sources(tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    with GatedFakeOpenAI() as model:
        project = make_model_project(tmp_path / "station", model.url)
        server = RestServer(project)
        try:
            with playwright.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium())
                page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone
                page.goto(server.url + "/")
                status = page.locator("#status")
                status.wait_for(state="visible", timeout=WAIT_MS)
                assert "being ingested for the first time" in status.inner_text()
                assert "station_docs" in status.inner_text()

                model.open.set()
                status.wait_for(state="hidden", timeout=WAIT_MS)
                assert page.locator("h1").inner_text() == "HoloDeck: station"
                assert not page.locator("#token-form").is_visible()  # no token set: not asked
                model.chat.push(
                    tool_calls(("station_docs", {"query": "airlock cycle"})),
                    text("The airlock cycles in ninety seconds; wear a helmet.", delay=0.05),
                )
                box = page.locator("#message")
                assert page.evaluate("document.activeElement.id") == "message"  # keyboard-first
                box.type("How long does the airlock take?")
                box.press("Enter")

                answer = page.locator(".turn .answer").last
                page.wait_for_function(
                    "document.querySelector('.turn .answer').textContent.includes('helmet')",
                    timeout=WAIT_MS,
                )
                assert answer.inner_text() == "The airlock cycles in ninety seconds; wear a helmet."
                assert "station_docs" in page.locator(".tools li").first.inner_text()
                assert "airlock cycle" in page.locator(".tools li").first.inner_text()
                link = page.locator("a.source", has_text="docs/airlock.md")
                assert link.count() == 1
                assert "Airlock › Cycling" in page.locator(".sources li").first.inner_text()
                wide = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
                assert not wide, "the page scrolls sideways on a phone"
                page.screenshot(path=str(ARTIFACTS / "chat-page-answer.png"), full_page=True)

                link.focus()
                page.keyboard.press("Enter")  # a source opens from the keyboard
                dialog = page.locator("#passage")
                dialog.wait_for(state="visible", timeout=WAIT_MS)
                assert page.locator("#passage-title").inner_text() == "docs/airlock.md"
                where = page.locator("#passage-where").inner_text()
                assert "Airlock › Cycling" in where and "lines" in where
                assert (
                    "airlock cycles in ninety seconds" in page.locator("#passage-text").inner_text()
                )
                page.screenshot(path=str(ARTIFACTS / "chat-page-source.png"), full_page=True)
                page.keyboard.press("Escape")
                dialog.wait_for(state="hidden", timeout=WAIT_MS)
                browser.close()
            assert server.stop() == 0
        finally:
            model.open.set()
            server.kill()
    assert (ARTIFACTS / "chat-page-source.png").stat().st_size > 10_000
