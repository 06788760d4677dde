"""What the runner keeps per session: the call quota, the result cache, the anomaly windows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from acpd.tools.anomaly import AnomalyDetector, AnomalySettings
from acpd.tools.cache import ResultCache
from acpd.tools.catalog.report import CatalogState
from acpd.tools.quota import Quota

if TYPE_CHECKING:
    from acpd.tools.spec import ToolSpec


class ExtraTools(Protocol):
    """Tools one session adds to the registry's (its MCP servers': acpd/mcpclient)."""

    def resolve(self, name: str, /) -> ToolSpec | None: ...

    def tools(self) -> list[ToolSpec]: ...

    async def prepare(self) -> None:
        """Before a prompt's first model request: start what must run to list the tools."""
        ...


@dataclass(frozen=True, slots=True)
class SessionToolSettings:
    max_tool_calls: int | None = None
    cache_enabled: bool = True
    cache_ttl: float | None = 300.0
    anomaly: AnomalySettings = field(default_factory=AnomalySettings)

    def new_state(self) -> SessionTools:
        return SessionTools(
            Quota(self.max_tool_calls),
            ResultCache(self.cache_enabled, self.cache_ttl),
            AnomalyDetector(self.anomaly),
        )


@dataclass(slots=True)
class SessionTools:
    quota: Quota = field(default_factory=Quota)
    cache: ResultCache = field(default_factory=ResultCache)
    anomaly: AnomalyDetector = field(default_factory=AnomalyDetector)
    extra: ExtraTools | None = None
    """This session's own tools (MCP servers), after the registry's; None: none."""
    catalog: CatalogState = field(default_factory=CatalogState)
    """Tools completed in this session and the last catalog report (tools/catalog)."""

    def clear(self) -> None:
        """`/clear`: the conversation starts afresh, so do cached results and the completed
        tools the dependency gates count."""
        self.cache.clear()
        self.catalog.clear()
