"""Every page names the favicon, /favicon.ico leads to it, and it is served."""

import pytest

pytestmark = pytest.mark.django_db


def test_pages_link_the_svg_favicon(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in (
        response.content.decode()
    )


def test_favicon_ico_redirects_to_the_svg_which_is_served(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == "/static/favicon.svg"
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200
    assert icon["Content-Type"] == "image/svg+xml"
    body = b"".join(icon.streaming_content) if icon.streaming else icon.content
    assert body.startswith(b'<svg xmlns="http://www.w3.org/2000/svg"')
