"""Images in prompts: which models take them, and the checks an image passes before a model
sees it.

Rules:
- A model takes images when its `kind:model` matches a glob of `[agent] image_models`
  (default: DEFAULT_IMAGE_MODELS, the Claude 3+ and GPT-4o/4.1/4.5/5, o1/o3/o4-mini
  families). `promptCapabilities.image` in the `initialize` answer says whether the
  configured default model (`--model`, else `[agent] model`) takes them; it is worked out
  before the config is validated (`image_capability`: a plain TOML read, no pydantic, and
  no read at all without a config file), because `initialize` is answered first.
- For a model that does not take images (a client should not send them: the capability
  said no) an image is left out of the prompt and the model reads a note saying so, as
  before images were supported. For a model that takes them, a prompt's image blocks are
  refused with -32602, nothing run and nothing stored, when the MIME type is not PNG,
  JPEG, GIF or WebP, the data is not base64, the decoded bytes do not start as that type
  does, an image is larger than `[agent] max_image_bytes` (5 MiB by default, Anthropic's
  own limit), or the prompt holds more than MAX_IMAGES. An image block with only a `uri`
  is refused too: acpd does not fetch what a prompt points to.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import os
import sys
from collections.abc import Iterable
from typing import Any

from acpd.protocol.errors import invalid_params
from acpd.providers.base import ImagePart

DEFAULT_IMAGE_MODELS = (
    "anthropic:claude-3*", "anthropic:claude-*-4*", "anthropic:claude-4*",
    "anthropic:claude-*-4-*", "openai:gpt-4o*", "openai:gpt-4.1*", "openai:gpt-4.5*",
    "openai:gpt-5*", "openai:o1", "openai:o1-20*", "openai:o3", "openai:o3-20*",
    "openai:o4-mini*",
)
MAX_IMAGES = 20
MAX_CONFIG_READ = 1 << 20
"""The config loader's own cap (daemon/config.py MAX_CONFIG_BYTES)."""
MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def model_takes_images(model: str | None, patterns: Iterable[str]) -> bool:
    if not model:
        return False
    return any(fnmatch.fnmatchcase(model, p) for p in patterns)


def prompt_images(
    blocks: list[dict[str, Any]], model: str | None, patterns: Iterable[str], max_bytes: int
) -> list[ImagePart] | None:
    """The prompt's images, checked; None when the model takes none (they are left out).
    Raises RpcError (-32602) saying what is wrong with an image."""
    if not model_takes_images(model, patterns):
        return None
    found = [b for b in blocks if isinstance(b, dict) and b.get("type") == "image"]
    if len(found) > MAX_IMAGES:
        raise invalid_params(f"a prompt may carry at most {MAX_IMAGES} images")
    return [_checked(n, block, max_bytes) for n, block in enumerate(found, 1)]


def _checked(n: int, block: dict[str, Any], max_bytes: int) -> ImagePart:
    mime, data = block.get("mimeType"), block.get("data")
    if not isinstance(data, str) or not data:
        raise invalid_params(f"image {n}: no data (acpd does not fetch an image's uri)")
    if not isinstance(mime, str) or mime.lower() not in MAGIC:
        raise invalid_params(f"image {n}: type {str(mime)[:60]!r} is not one of "
                             f"{', '.join(sorted(MAGIC))}")
    mime = mime.lower()
    if len(data) * 3 // 4 > max_bytes + 3:
        raise invalid_params(f"image {n}: larger than the {max_bytes}-byte limit "
                             "([agent] max_image_bytes)")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise invalid_params(f"image {n}: the data is not valid base64") from None
    if len(raw) > max_bytes:
        raise invalid_params(f"image {n}: {len(raw)} bytes, over the {max_bytes}-byte limit "
                             "([agent] max_image_bytes)")
    if not raw.startswith(MAGIC[mime]) or (mime == "image/webp" and raw[8:12] != b"WEBP"):
        raise invalid_params(f"image {n}: the data is not a {mime} image")
    return ImagePart(mime, data)


# --- before the config loads: the initialize answer ------------------------------------------


def image_capability(config: str | None, model: str | None) -> bool:
    """Whether the default model takes images, from `--model` and the config file, read
    without pydantic or platformdirs (initialize is answered before they load). Any problem
    with the file gives False: the full load reports it later."""
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
    import tomllib

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
