"""The app in a real browser: Debian's Chromium driven by Playwright against `streamlit run`.

A new user's path: create a knowledge base, upload a real PDF, ask a question whose answer
is in it, see the answer cite the file and page, give a thumbs up, find it in analytics.
Screenshots of every page go to test-output/screenshots/.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO.parent / "shared" / "data" / "pdfs-py-pdf-sample-files" / "011-google-doc-document" / "google-doc-document.pdf"
CHROMIUM = "/usr/bin/chromium"
SHOTS = REPO / "test-output" / "screenshots"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Debian chromium is not installed (.ci/run installs it)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("e2e") / "data"
    port = free_port()
    env = {**os.environ, "RAG_DATA_DIR": str(data), "PYTHONPATH": str(REPO)}
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start:\n" + proc.stdout.read().decode(errors="replace")[-2000:])
    yield url, time.perf_counter() - t0
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.set_default_timeout(90_000)
        yield pg
        browser.close()


def sample_pdf(tmp: Path) -> Path:
    if SAMPLE.exists():
        return SAMPLE
    sys.path.insert(0, str(REPO))
    from tests.helpers import make_pdf

    f = tmp / "google-doc-document.pdf"
    f.write_bytes(make_pdf(["Example document", "Flat is better than nested. Readability counts."]))
    return f


@pytest.fixture
def shot_on_failure(page, request):
    yield
    if getattr(request.node, "rep_call", None) is None or request.node.rep_call.failed:
        page.screenshot(path=str(SHOTS / "failure.png"), full_page=True)


def test_new_user_journey(server, page, tmp_path, shot_on_failure):
    url, started_s = server
    t = time.perf_counter()
    page.goto(url)
    page.get_by_text("Chat with your documents").wait_for()
    first_render_s = time.perf_counter() - t
    print(f"\ncold start to health: {started_s:.1f}s; first page render: {first_render_s:.1f}s")
    page.screenshot(path=str(SHOTS / "1-chat-empty.png"))

    # create a knowledge base on the Upload page
    page.get_by_role("link", name="Upload").click()
    page.get_by_label("Name").fill("Zen")
    page.get_by_role("button", name="Create").click()
    page.get_by_text("Created Zen").wait_for()

    # upload a real PDF
    page.locator("input[type=file]").set_input_files(str(sample_pdf(tmp_path)))
    page.get_by_role("button", name="Add 1 file(s) to Zen").click()
    page.get_by_text("1 ingested").wait_for()
    page.get_by_text("google-doc-document.pdf").first.wait_for()
    page.screenshot(path=str(SHOTS / "2-upload.png"), full_page=True)

    # ask a question whose answer is in the PDF
    page.get_by_role("link", name="Chat").click()
    box = page.get_by_placeholder("Ask a question about your documents")
    box.fill("Is flat better than nested?")
    box.press("Enter")
    reply = page.locator("[data-testid=stChatMessage]").nth(1)
    reply.get_by_text("Flat is better than nested").first.wait_for()
    page.get_by_text("Supported").first.wait_for()
    page.get_by_text("Sources (").first.click()
    page.get_by_text("google-doc-document.pdf").first.wait_for()
    page.get_by_text("page 1").first.wait_for()
    page.screenshot(path=str(SHOTS / "3-chat-answer.png"), full_page=True)

    # thumbs up
    page.get_by_role("radio", name="Thumbs up").first.click()
    page.get_by_text("Add a comment").wait_for()

    # analytics counts it
    page.get_by_role("link", name="Analytics").click()
    page.get_by_text("Feedback analytics").wait_for()
    rated = page.locator("[data-testid=stMetric]").filter(has_text="Rated")
    rated.get_by_text("1", exact=True).wait_for()
    helpful = page.locator("[data-testid=stMetric]").filter(has_text="Helpful")
    helpful.get_by_text("100%").wait_for()
    page.get_by_text("Lowest grounded").wait_for()
    page.get_by_role("button", name="Download all answers and feedback (CSV)").wait_for()
    page.wait_for_timeout(1500)  # let the charts draw before the screenshot
    page.screenshot(path=str(SHOTS / "4-analytics.png"), full_page=True)

    page.get_by_role("link", name="Knowledge bases").click()
    page.get_by_text("Custom instructions").wait_for()
    page.screenshot(path=str(SHOTS / "5-knowledge-bases.png"), full_page=True)
