"""Per-thread state of the judge (one decision per thread at a time), kept in this module
because it is never compiled (_native.py): mypyc lays out the attributes of a class it
compiles natively, and a compiled subclass of `threading.local` then crashes the process
when a second thread reads it. Defined here, these are ordinary Python classes, and compiled
code reads them by name, as the interpreter does."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpd.policy.budget import _Budget
    from acpd.policy.gitobjects import LineRecord
    from acpd.policy.hookdirs import Found
    from acpd.policy.sandbox import _Decision


class BudgetSlot(threading.local):
    """budget.py: the decision's budget on this thread."""

    budget: _Budget | None = None


class DecisionScope(threading.local):
    """sandbox.py: the file-system memo of the decision this thread is making."""

    current: _Decision | None = None


class HookMemo(threading.local):
    """hookdirs.py: hooks directories and hook links, read once per decision."""

    owner: object | None = None
    dirs: dict[str, Found | str] | None = None
    links: dict[str, dict[str, str]] | None = None


class LineState(threading.local):
    """gitobjects.py: what the commands of the line being judged did to git's objects."""

    record: LineRecord | None = None
