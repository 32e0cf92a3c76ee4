"""Shared pieces of the real-browser tests: Debian's chromium and signing in."""

from playwright.sync_api import Browser, Page, expect

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
PASSWORD = "pw-for-tests"  # tests.factories.UserFactory's password


def sign_in(browser: Browser, live_server, username: str, **context_options) -> Page:
    """A new browser context signed in as `username` through the login form."""
    context = browser.new_context(viewport={"width": 1100, "height": 900}, **context_options)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="My legacies")).to_be_visible()
    return page
