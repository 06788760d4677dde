"""`[serve] remote` read before anything heavy loads (as daemon/image_models.py reads
`[agent]`): `acpd serve` decides in a few milliseconds whether it forwards. Any problem
reads as "off": the full load (pydantic) reports it later."""

from __future__ import annotations

import os

from acpd.daemon.image_models import MAX_CONFIG_READ, _default_config


def serve_remote(config: str | None) -> str:
    """"auto" or "off": the config file's `[serve] remote`."""
    path = config or os.environ.get("ACPD_CONFIG") or _default_config()
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_CONFIG_READ:
            return "off"
        import tomllib

        with open(path, "rb") as handle:
            serve = tomllib.load(handle).get("serve", {})
    except Exception:
        return "off"
    value = serve.get("remote") if isinstance(serve, dict) else None
    return "auto" if value == "auto" else "off"
