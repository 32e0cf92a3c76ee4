"""The caller's address for the login brake, read as DRF's throttles read it (NUM_PROXIES)."""

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """REMOTE_ADDR, or behind NUM_PROXIES reverse proxies the address the outermost of them
    saw: that many entries from the end of X-Forwarded-For (earlier entries are the client's
    own claim and could be anything)."""
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.NUM_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return remote
