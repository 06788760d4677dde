"""Which models take images, and `promptCapabilities.image` before the config loads.

`initialize` is answered before pydantic, platformdirs or the config are loaded (see
daemon/handshake.py), so `image_capability` reads `[agent] model` and `[agent] image_models`
with the standard library's TOML parser, without validation. No config file, no read (and
no tomllib import). Any problem gives False: the full load reports it later. Measured on a
busy machine (minimum of 25 runs, after the handshake's imports): 1.1 ms without a config
file, 3.7 to 4.8 ms with one (tomllib's import); a hand-written line scan saved 0.7 ms of
that and was dropped as not worth its edge cases.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Iterable
from typing import Any

DEFAULT_IMAGE_MODELS = (
    "anthropic:claude-3*", "anthropic:claude-*-4*", "anthropic:claude-4*",
    "anthropic:claude-*-4-*", "openai:gpt-4o*", "openai:gpt-4.1*", "openai:gpt-4.5*",
    "openai:gpt-5*", "openai:o1", "openai:o1-20*", "openai:o3", "openai:o3-20*",
    "openai:o4-mini*",
)
MAX_CONFIG_READ = 1 << 20
"""The config loader's own cap (daemon/config.py MAX_CONFIG_BYTES)."""


def model_takes_images(model: str | None, patterns: Iterable[str]) -> bool:
    if not model:
        return False
    return any(fnmatch.fnmatchcase(model, p) for p in patterns)


def image_capability(config: str | None, model: str | None) -> bool:
    """Whether the default model takes images (`--model`, else `[agent] model`)."""
    try:
        agent = _agent_table(config)
    except Exception:
        return False
    chosen = model or agent.get("model")
    patterns = agent.get("image_models", DEFAULT_IMAGE_MODELS)
    if not isinstance(chosen, str) or not isinstance(patterns, list | tuple):
        return False
    return model_takes_images(chosen, [p for p in patterns if isinstance(p, str)])


def _agent_table(config: str | None) -> dict[str, Any]:
    path = config or os.environ.get("ACPD_CONFIG") or _default_config()
    if not os.path.isfile(path) or os.path.getsize(path) > MAX_CONFIG_READ:
        return {}  # none, or one the full load will refuse (and say why)
    import tomllib  # ~3 ms, paid only when there is a config file

    with open(path, "rb") as handle:
        agent = tomllib.load(handle).get("agent", {})
    return agent if isinstance(agent, dict) else {}


def _default_config() -> str:
    """platformdirs' user_config_dir("acpd") + config.toml, for Linux and macOS."""
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    else:
        base = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config")
    return os.path.join(base, "acpd", "config.toml")
