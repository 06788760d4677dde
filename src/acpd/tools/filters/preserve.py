"""Lines no filter may hide: found in the raw output, re-appended when a filter removed them.

Panics and crashes, authentication and permission failures, certificate and host-key
problems, security advisories. For a failing command, its error lines too.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from acpd.tools.filters.substrings import SubstringSet

MAX_PRESERVED = 30
MAX_LINE = 500

_SECURITY = re.compile(
    r"(?m)"
    r"panicked at|\bpanic: |^thread '.*' panicked|Traceback \(most recent call last\)"
    r"|Segmentation fault|core dumped|SIGSEGV|SIGABRT|stack overflow|out of memory|OOMKilled"
    r"|(?i:permission denied|access denied|authentication failed|authentication required"
    r"|unauthori[sz]ed|forbidden|invalid credentials|bad credentials|could not read username"
    r"|certificate verify failed|ssl certificate problem|host key verification failed"
    r"|remote host identification has changed|security advisory|\bvulnerabilit(?:y|ies)\b"
    r"|\bsecurity (?:warning|vulnerability|issue))"
    r"|RUSTSEC-\d{4}-\d{4}|GHSA-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}|CVE-\d{4}-\d{4,}"
)
_ERROR = re.compile(
    r"(?m)\berror(?:\[\w+\])?:|\bERROR\b|\bFAILED\b|^fatal: |\bFatal error\b|^E\s{3}"
)
_TRIGGERS = (
    "panic",
    "Traceback",
    "Segmentation",
    "core dumped",
    "SIG",
    "overflow",
    "out of memory",
    "OOM",
    "ermission",
    "ccess",
    "uthenticat",
    "uthori",
    "orbidden",
    "redentials",
    "sername",
    "ertificate",
    "ERMISSION",
    "CCESS",
    "UTHENTICAT",
    "UTHORI",
    "ORBIDDEN",
    "host key",
    "HOST KEY",
    "HOST IDENTIFICATION",
    "dvisor",
    "DVISOR",
    "ulnerab",
    "ULNERAB",
    "ecurity",
    "ECURITY",
    "RUSTSEC-",
    "GHSA-",
    "CVE-",
)

TRIGGERS = frozenset(_TRIGGERS)
"""Literal substrings one of which any _SECURITY match contains."""
_NEEDLES = SubstringSet(TRIGGERS)


def find_preserved(
    raw: str, kept: Collection[str], *, failed: bool, security: bool | None = None
) -> list[str]:
    """Lines of `raw` (sanitised) matching a preserved pattern that are not in `kept`.

    Searches the whole text once per pattern rather than line by line: most outputs contain
    none, and then this costs one substring pass (none when the caller already knows, by
    `security`, whether one of TRIGGERS occurs in `raw`). `kept` is turned into a set only
    when a candidate line is found.
    """
    if security is None:
        security = bool(_NEEDLES.present(raw))
    patterns = []
    if security:
        patterns.append(_SECURITY)
    if failed:
        patterns.append(_ERROR)
    found: list[str] = []
    seen: set[str] = set()
    kept_set: Collection[str] | None = kept if isinstance(kept, set | frozenset) else None
    for pattern in patterns:
        for m in pattern.finditer(raw):
            start = raw.rfind("\n", 0, m.start()) + 1
            end = raw.find("\n", m.end())
            line = raw[start : end if end >= 0 else len(raw)]
            if line in seen:
                continue
            if kept_set is None:
                kept_set = set(kept)
            if line in kept_set:
                continue
            seen.add(line)
            found.append(line if len(line) <= MAX_LINE else line[:MAX_LINE] + " ...")
            if len(found) >= MAX_PRESERVED:
                return found
    return found
