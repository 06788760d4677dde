"""The per-turn tool catalog: schema filtering, dependency gates and TAFC (docs/catalog.md).

`make_builder` turns `[agent.catalog]` into the daemon's one CatalogBuilder (caches shared by
every session); `CatalogState` is each session's part (completed tools, the last report for
/status), kept in SessionTools and emptied by /clear.
"""

from __future__ import annotations

import os

from acpd.tools.catalog.builder import CatalogBuilder, last_query, native_tool_use
from acpd.tools.catalog.config import CatalogConfig
from acpd.tools.catalog.embeddings import EmbeddingClient
from acpd.tools.catalog.report import CatalogReport, CatalogState

__all__ = [
    "CatalogBuilder", "CatalogConfig", "CatalogReport", "CatalogState", "last_query",
    "make_builder", "native_tool_use",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


def make_builder(
    config: CatalogConfig, *, openai_base_url: str | None = None,
    openai_key_env: str | None = None,
) -> CatalogBuilder:
    """The builder for `[agent.catalog]`; embeddings default to `[providers.openai]`'s
    endpoint and key variable when `[agent.catalog.embeddings] model` is set."""
    e = config.embeddings
    embedder = None
    if e.model is not None:
        key_env = e.api_key_env or openai_key_env or DEFAULT_KEY_ENV
        embedder = EmbeddingClient(
            e.model, e.base_url or openai_base_url or DEFAULT_BASE_URL,
            os.environ.get(key_env), e.timeout,
        )
    return CatalogBuilder(config, embedder)
