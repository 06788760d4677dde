"""What the daemon leaves unloaded because no session needs it (memory is a feature too).

pydantic looks for plugins (the `pydantic` entry-point group) when it builds its first model:
`pydantic.plugin._loader` imports `importlib.metadata`, which brings `email`, `zipfile` and
`csv` (~2 MB resident), and then reads the metadata of every installed distribution. acpd
uses no pydantic plugin, so `acpd serve` puts a loader that finds none in its place before
pydantic is imported. Any other name asked of that module loads the real one, so a pydantic
version that needs more from it still works. `ACPD_PYDANTIC_PLUGINS=1` keeps the real loader.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Iterable
from typing import Any

LOADER = "pydantic.plugin._loader"


class _NoPlugins(types.ModuleType):
    """Stands in for pydantic's plugin loader: no plugins, nothing read from disk."""

    @staticmethod
    def get_plugins() -> Iterable[Any]:
        return ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system probing (__path__, ...): not a module
            raise AttributeError(name)
        if sys.modules.get(LOADER) is self:
            del sys.modules[LOADER]
        return getattr(importlib.import_module(LOADER), name)


def skip_pydantic_plugins() -> bool:
    """Install the stand-in unless pydantic's loader is already loaded or plugins are
    asked for; returns whether it was installed."""
    if LOADER in sys.modules or os.environ.get("ACPD_PYDANTIC_PLUGINS") == "1":
        return False
    sys.modules[LOADER] = _NoPlugins(LOADER)
    return True
