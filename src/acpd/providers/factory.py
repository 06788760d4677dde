"""`kind:model` strings to provider objects; each provider module is imported only here."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpd.daemon.config import Config
    from acpd.providers.base import Provider

KINDS = ("openai", "anthropic", "scripted")
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class ProviderSpecError(ValueError):
    pass


def parse_spec(spec: str) -> tuple[str, str]:
    """Split `kind:model`; raises ProviderSpecError for an unknown kind or an empty model."""
    kind, sep, model = spec.partition(":")
    if not sep or kind not in KINDS or not model.strip():
        raise ProviderSpecError(
            f"bad model {spec!r}: use openai:NAME, anthropic:NAME or scripted:PATH"
        )
    return kind, model.strip()


def make_provider(spec: str, config: Config) -> Provider:
    """Build the provider for `spec`. Raises ProviderSpecError, or the provider's own error
    (e.g. a script that does not load) with a message that says what is wrong."""
    kind, model = parse_spec(spec)
    if kind == "scripted":
        from acpd.providers.scripted import ScriptedProvider

        return ScriptedProvider(model)
    settings = getattr(config.providers, kind)
    key_env = settings.api_key_env or DEFAULT_KEY_ENV[kind]
    api_key = os.environ.get(key_env)
    if kind == "openai":
        from acpd.providers.openai import OpenAIProvider

        return OpenAIProvider(
            model,
            base_url=settings.base_url or "https://api.openai.com/v1",
            api_key=api_key,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )
    from acpd.providers.anthropic import AnthropicProvider

    if not api_key:
        raise ProviderSpecError(f"anthropic:{model} needs an API key in ${key_env}")
    return AnthropicProvider(
        model,
        base_url=settings.base_url or "https://api.anthropic.com",
        api_key=api_key,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
    )
