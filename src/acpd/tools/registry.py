"""The tool registry: unique namespaced ids, short names for the model, a per-mode catalog."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from acpd.tools.spec import Effect, ToolSpec


class DuplicateTool(Exception):
    pass


class ToolRegistry:
    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._by_id: dict[str, ToolSpec] = {}
        self._by_name: dict[str, ToolSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        """Add a tool; raises DuplicateTool when its id or short name is taken."""
        if spec.id in self._by_id:
            raise DuplicateTool(f"tool id {spec.id!r} is already registered")
        if spec.name in self._by_name:
            other = self._by_name[spec.name].id
            raise DuplicateTool(f"tool name {spec.name!r} of {spec.id!r} is taken by {other!r}")
        self._by_id[spec.id] = spec
        self._by_name[spec.name] = spec

    def resolve(self, name: str) -> ToolSpec | None:
        """Find a tool by short name or namespaced id."""
        return self._by_name.get(name) or self._by_id.get(name)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def catalog(self, mode: str) -> list[ToolSpec]:
        """The tools the model is shown in `mode`: a tool the mode denies is never shown."""
        return [spec for spec in self if mode_allows_at_all(mode, spec.effect)]


def mode_allows_at_all(mode: str, effect: Effect) -> bool:
    return not (mode == "read-only" and effect is not Effect.READ_ONLY)
