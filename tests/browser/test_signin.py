"""Real OIDC sign-in in Chromium: Streamlit's st.login against a local OpenID provider
(oidc-provider-mock on localhost, tests/conftest.py) with two users in different groups. User B must find no
trace of user A's private knowledge base: not in the selector, not searched, not cited, its
original not downloadable; signed out, only the sign-in page."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from tests.browser.test_e2e import CHROMIUM, SHOTS, free_port, streamlit_app
from rag_core.access import Caller

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed")
SECRET = "The launch code of project Papaya is 4471."


@pytest.fixture(scope="module")
def app(oidc, tmp_path_factory):
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    root = tmp_path_factory.mktemp("signin")
    data = root / "data"
    ws = Workspace(get_settings(data))
    ws.create_kb("Alice private", acl_users=["alice@example.com"], caller=Caller.operator())
    ws.create_kb("Company handbook", caller=Caller.operator())
    (root / "papaya.md").write_text(f"# Papaya\n\n{SECRET}\n")
    (root / "handbook.md").write_text("# Handbook\n\nThe office opens at 8 o'clock.\n")
    ws.ingest("Alice private", [root / "papaya.md"], caller=Caller.operator())
    ws.ingest("Company handbook", [root / "handbook.md"], caller=Caller.operator())
    private = ws.appdb.list_documents(ws.get_kb("Alice private", caller=Caller.operator()).kb_id)[0]
    ws.close()

    port = free_port()
    secrets = root / "secrets.toml"
    secrets.write_text(f"""[auth]
redirect_uri = "http://localhost:{port}/oauth2callback"
cookie_secret = "a-test-cookie-secret-of-enough-length"
client_id = "groundwork"
client_secret = "groundwork-secret"
server_metadata_url = "{oidc}/.well-known/openid-configuration"
""")
    with streamlit_app(data, host="localhost", args=("--secrets.files", str(secrets)), port=port) as (url, _):
        yield url, private


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-quic"])
        yield b
        b.close()


def sign_in(browser, url: str, sub: str):
    ctx = browser.new_context(viewport={"width": 1300, "height": 950})
    page = ctx.new_page()
    page.set_default_timeout(90_000)
    page.goto(url)
    page.get_by_role("button", name="Sign in").click()
    # the provider's authorization form: the user to sign in as
    page.locator("input[name=sub]").fill(sub)
    page.locator("form button[type=submit], form input[type=submit]").first.click()
    page.get_by_text("Chat with your documents").wait_for()
    return ctx, page


def ask(page, question: str):
    box = page.get_by_placeholder("Ask a question about your documents")
    box.fill(question)
    box.press("Enter")
    reply = page.locator("[data-testid=stChatMessage]").last
    reply.locator("[data-testid=stCaptionContainer], [data-testid=stAlert]").first.wait_for()
    return reply


def selector_options(page) -> str:
    """Everything the knowledge-base selector offers: the chosen chips and the other options."""
    box = page.locator("[data-testid=stSidebar] [data-testid=stMultiSelect]")
    chosen = box.inner_text()
    box.click()
    opts = [o.inner_text() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return chosen + "\n" + "\n".join(opts)


def test_signed_out_sees_only_the_sign_in_page(app, browser):
    url, _ = app
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(url)
    page.get_by_role("button", name="Sign in").wait_for()
    assert page.get_by_text("Chat with your documents").count() == 0
    assert page.get_by_role("link", name="Upload", exact=True).count() == 0
    page.screenshot(path=str(SHOTS / "7-sign-in.png"))
    ctx.close()


def test_two_users_see_only_what_they_may(app, browser):
    url, private = app
    # Alice: her private knowledge base is there, and answers from it
    actx, alice = sign_in(browser, url, "alice@example.com")
    alice.get_by_text("alice@example.com").first.wait_for()
    offered = selector_options(alice)
    assert "Alice private" in offered and "Company handbook" in offered
    if "Alice private" not in alice.locator("[data-testid=stSidebar] [data-testid=stMultiSelect]").inner_text():
        alice.locator("[data-testid=stSidebar] [data-testid=stMultiSelect]").click()
        alice.get_by_role("option", name="Alice private").click()
        alice.keyboard.press("Escape")
    reply = ask(alice, "What is the launch code of project Papaya?")
    reply.get_by_text("4471").first.wait_for()
    alice.screenshot(path=str(SHOTS / "8-alice.png"))

    # Bob: no trace of it anywhere
    bctx, bob = sign_in(browser, url, "bob@example.com")
    bob.get_by_text("bob@example.com").first.wait_for()
    assert "Alice private" not in selector_options(bob)
    assert "Company handbook" in selector_options(bob)
    reply = ask(bob, "What is the launch code of project Papaya?")
    assert "4471" not in reply.inner_text() and "papaya.md" not in reply.inner_text()
    # conversations: only his own (Alice asked the same question; her thread is not listed)
    sidebar = bob.locator("[data-testid=stSidebar]")
    # the thread list is redrawn after the answer: wait for his thread (titled by its topic words), then count
    threads = sidebar.get_by_role("button", name="Launch code project Papaya · ")
    threads.first.wait_for()
    assert threads.count() == 1
    bob.get_by_role("link", name="Upload", exact=True).click()
    bob.get_by_text("Upload documents").wait_for()
    bob.get_by_label("Knowledge base", exact=True).click()
    assert "Alice private" not in [o.inner_text() for o in bob.get_by_role("option").all()]
    bob.keyboard.press("Escape")
    bob.get_by_role("link", name="Knowledge bases", exact=True).click()
    bob.get_by_text("Custom instructions").wait_for()
    assert bob.get_by_text("Alice private").count() == 0
    bob.get_by_role("link", name="Analytics", exact=True).click()
    bob.get_by_text("Feedback analytics").wait_for()
    metric = bob.locator("[data-testid=stMetric]").filter(has_text="Answers")
    metric.get_by_text("1", exact=True).wait_for()  # his own one answer, not Alice's
    bob.screenshot(path=str(SHOTS / "9-bob.png"), full_page=True)

    # a crafted request for the original: Streamlit serves files only through per-session
    # media ids; there is no URL that names a document, so guess the obvious ones
    for path in (f"/media/{private.doc_id}", f"/app/static/{private.doc_id}.md", f"/{private.stored_path}"):
        try:
            body = urllib.request.urlopen(url + path, timeout=5).read()
        except OSError:
            continue
        assert SECRET.encode() not in body, path

    # signing out ends the session: back to the sign-in page
    bob.get_by_role("link", name="Chat", exact=True).click()
    bob.get_by_role("button", name="Sign out").click()
    bob.wait_for_url("**/end_session**")  # the provider's logout; the app's cookie is already gone
    bob.goto(url)
    bob.get_by_role("button", name="Sign in").wait_for()
    assert bob.get_by_text("Chat with your documents").count() == 0
    actx.close()
    bctx.close()


def test_trusted_header_mode(tmp_path, browser):
    """Behind an auth proxy (RAG_TRUSTED_HEADERS=true): the user and groups come from its
    headers; a request without them gets no app at all."""
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    data = tmp_path / "data"
    ws = Workspace(get_settings(data))
    ws.create_kb("Research notes", acl_groups=["research"], caller=Caller.operator())
    ws.create_kb("Sales notes", acl_groups=["sales"], caller=Caller.operator())
    ws.close()
    with streamlit_app(data, env={"RAG_TRUSTED_HEADERS": "true"}) as (url, _):
        ctx = browser.new_context(extra_http_headers={"X-Forwarded-User": "carol", "X-Forwarded-Groups": "research"})
        page = ctx.new_page()
        page.set_default_timeout(90_000)
        page.goto(url)
        page.get_by_text("Chat with your documents").wait_for()
        page.get_by_text("carol").first.wait_for()
        offered = selector_options(page)
        assert "Research notes" in offered and "Sales notes" not in offered
        ctx.close()
        anon = browser.new_context()
        page = anon.new_page()
        page.goto(url)
        page.get_by_text("No identity came with this request").wait_for()
        assert page.get_by_text("Chat with your documents").count() == 0
        anon.close()
