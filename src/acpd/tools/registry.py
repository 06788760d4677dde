"""The tool registry: executors in a fixed order, unique namespaced ids, short names.

Tools come from executors (the seeds' CompositeExecutor chain): `file`, `shell`, `plan` today,
`mcp`, `plugin` later. Executors register in a fixed, configurable order, and that order
decides two things: the order of the catalog the model sees (stable, so provider prompt caches
keep hitting) and who owns a short name two executors both offer (the first; the later tool is
then shown and called by its namespaced id). Registration refuses, with RegistrationError: an id
taken twice, a short name taken twice within one executor, an id outside the namespaces, a
schema outside the restricted subset, a tool without a redaction config.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from acpd.tools.schema import SchemaError
from acpd.tools.spec import ToolSpec

ID_PATTERN = re.compile(
    r"^(core__[a-z][a-z0-9_]*|mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+|plugin__[A-Za-z0-9_-]+)$"
)
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What every provider accepts as a function name (OpenAI's is the strictest)."""


class RegistrationError(Exception):
    """A tool that cannot be registered; the message says which and why."""


class DuplicateTool(RegistrationError):
    pass


@dataclass(frozen=True, slots=True)
class ToolSource:
    """One executor: a name the config orders by, and its tools."""

    name: str
    specs: Sequence[ToolSpec]


class ToolRegistry:
    def __init__(self, specs: Iterable[ToolSpec] = (), *, source: str = "core") -> None:
        self._by_id: dict[str, ToolSpec] = {}
        self._by_name: dict[str, ToolSpec] = {}
        self._name_of: dict[str, str] = {}
        self._source_of: dict[str, str] = {}
        self.order: list[str] = []
        self.refused: dict[str, str] = {}
        """Tools found but kept out (plugin tools the external filter or the capability
        preset refuses), by name and id: why, for the error a call to one gets."""
        self.add_source(ToolSource(source, list(specs)))

    @classmethod
    def from_sources(
        cls, sources: Sequence[ToolSource], order: Sequence[str] = ()
    ) -> ToolRegistry:
        """Register `sources` in `order` (names), the unnamed ones after, as given.

        Raises RegistrationError for an unknown name in `order` or any bad tool.
        """
        known = {s.name: s for s in sources}
        unknown = [name for name in order if name not in known]
        if unknown:
            raise RegistrationError(
                f"executor order names {', '.join(unknown)}; the executors are "
                f"{', '.join(known)}"
            )
        ranked = [known[n] for n in dict.fromkeys(order)]
        ranked += [s for s in sources if s.name not in order]
        registry = cls()
        for source in ranked:
            registry.add_source(source)
        return registry

    def add_source(self, source: ToolSource) -> None:
        """Register an executor's tools after those already registered."""
        if not source.specs:
            return
        names: set[str] = set()
        for spec in source.specs:
            if spec.name in names:
                raise DuplicateTool(
                    f"tool name {spec.name!r} appears twice in executor {source.name!r}"
                )
            names.add(spec.name)
            self.register(spec, source=source.name)
        self.order.append(source.name)

    def register(self, spec: ToolSpec, *, source: str = "core") -> None:
        """Add one tool; raises RegistrationError (DuplicateTool for a taken id)."""
        if spec.id in self._by_id:
            raise DuplicateTool(f"tool id {spec.id!r} is already registered")
        if not ID_PATTERN.match(spec.id):
            raise RegistrationError(
                f"tool id {spec.id!r} is not namespaced (core__<name>, mcp__<server>__<tool> "
                "or plugin__<name>)"
            )
        if not NAME_PATTERN.match(spec.name):
            raise RegistrationError(f"tool name {spec.name!r} is not a valid function name")
        if spec.redaction is None:
            raise RegistrationError(
                f"tool {spec.id!r} has no redaction config: say which argument and result "
                "fields may be logged (an empty allowlist logs sizes only)"
            )
        try:
            spec.input_schema()
        except SchemaError as exc:
            raise RegistrationError(f"tool {spec.id!r}: {exc}") from None
        owner = self._by_name.get(spec.name)
        if owner is not None and self._source_of[owner.id] == source:
            raise DuplicateTool(
                f"tool name {spec.name!r} of {spec.id!r} is taken by {owner.id!r}"
            )
        # The first executor keeps the short name; a later one's tool goes by its id.
        shown = spec.id if owner is not None else spec.name
        self._by_id[spec.id] = spec
        self._by_name.setdefault(shown, spec)
        self._name_of[spec.id] = shown
        self._source_of[spec.id] = source

    def resolve(self, name: str) -> ToolSpec | None:
        """Find a tool by the name the model is shown or by its namespaced id."""
        return self._by_name.get(name) or self._by_id.get(name)

    def name_of(self, spec: ToolSpec) -> str:
        """The name the model and the slash commands use for `spec`."""
        return self._name_of.get(spec.id, spec.name)

    def source_of(self, spec: ToolSpec) -> str:
        return self._source_of.get(spec.id, "core")

    def __iter__(self) -> Iterator[ToolSpec]:
        """In registration order: executors in their configured order."""
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)
