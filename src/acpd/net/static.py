"""The part of the SSRF wall that needs no I/O: the URL's form and an address literal.

Run before the policy decision (ToolSpec.precheck), so a URL that can never be fetched is
refused at once, with a "blocked url" or "blocked address" PolicyBlocked error, without asking
the user and without a DNS query; names are resolved and judged later, when the call runs.
"""

from __future__ import annotations

from acpd.net.addresses import BlockedHost, check_address
from acpd.net.settings import FetchSettings, NetHooks
from acpd.net.urls import Target, parse_target

__all__ = ["BlockedHost", "check_static"]


def check_static(url: str, settings: FetchSettings, hooks: NetHooks | None = None) -> Target:
    """The parsed target of `url`; raises BlockedHost when its form or its literal address
    is refused."""
    hooks = hooks or NetHooks()
    target = parse_target(url, settings.allowed_ports, allow_http=hooks.allow_http)
    if target.address is not None and not hooks.counts_public(target.address):
        check_address(target.address, str(target.address))
        if target.scheme == "http":  # the hook allows http to its loopback servers only
            raise BlockedHost("blocked url: plain http is for loopback test servers only")
    return target
