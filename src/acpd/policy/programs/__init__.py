"""Per-program argument specs: `model(name, args)` says what an argv reads, writes, deletes and
whether the spec knows every option and argument of it (`Model.unknown` empty).

The tables live in `coreutils` (read tools, file tools, builtins), `scripts` (sed, awk, find,
tar, date, hostname) and `git`; the model itself in `spec`. A program without a table has no
model (`None`): the engine falls back to `argspec.path_args` for its paths, and an allow rule
marked `modeled = true` does not allow it (unless sandboxed).
"""

from __future__ import annotations

from acpd.policy import _native

_native.extend(__path__, "programs")  # compiled modules first, before any is imported

from acpd.policy.programs.models import Model, known, model, names  # noqa: E402

__all__ = ["Model", "known", "model", "names"]
