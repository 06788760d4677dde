"""Images in prompts: which models take them, and the checks an image passes before a model
sees it.

Rules:
- A model takes images when its `kind:model` matches a glob of `[agent] image_models`
  (default: DEFAULT_IMAGE_MODELS, the Claude 3+ and GPT-4o/4.1/4.5/5, o1/o3/o4-mini
  families). `promptCapabilities.image` in the `initialize` answer says whether the
  configured default model (`--model`, else `[agent] model`) takes them; it is worked out
  before the config is validated (daemon/image_models.py), because `initialize` is
  answered first.
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
from collections.abc import Iterable
from typing import Any

from acpd.daemon.image_models import DEFAULT_IMAGE_MODELS, model_takes_images
from acpd.protocol.errors import invalid_params
from acpd.providers.base import ImagePart

__all__ = ["DEFAULT_IMAGE_MODELS", "model_takes_images", "prompt_images"]

MAX_IMAGES = 20
MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


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
