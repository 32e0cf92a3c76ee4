"""Screenshots are written into docs/screenshots/ only when pytest runs with --screenshots, so
that an ordinary test run leaves the tracked files alone."""

import pytest

from tests.conftest import SCREENSHOTS


class _PageThatMustNotBeShot:
    def screenshot(self, **kwargs):
        raise AssertionError(f"a screenshot was taken without --screenshots: {kwargs}")


def test_without_the_option_no_screenshot_is_taken(request, screenshots_dir, save_screenshot):
    if request.config.getoption("--screenshots"):
        pytest.skip("this run writes the screenshots on purpose")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in SCREENSHOTS.glob("*"))

    assert screenshots_dir is None
    assert save_screenshot(_PageThatMustNotBeShot(), "chat-page.png") is None
    assert sorted((p.name, p.stat().st_mtime_ns) for p in SCREENSHOTS.glob("*")) == before

