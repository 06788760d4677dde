"""Credential detection and redaction for tool output.

`scan_secrets(text)` returns the text with every credential value replaced by
`[REDACTED:<kind>]` and the findings (kind, count). It runs on the *raw* output, before any
filter, so a secret in a line the filter dropped is still reported, and the redacted raw text
is what overflow, audit and session storage keep.

Patterns favour precision: provider tokens by their fixed prefixes and lengths, private keys by
their armour, JWTs by their two base64url-JSON segments, bearer tokens and URL passwords by
their syntax. Git SHAs, UUIDs, integrity hashes and other base64 blobs do not match. Each
pattern has literal triggers, all found in one Aho-Corasick pass (`SubstringSet`), so clean
output costs one scan at memory speed and only the patterns whose trigger occurs run.

Cuts and seams. Output cut by a byte limit, or still growing, can hold part of a secret that no
pattern matches on its own: key lines whose BEGIN line was cut off (`redact_key_tails` hides
the lines before an orphan END line, `redact_cut_key_head` armour lines at the very start of
output someone else cut, `key_open_at`/`redact_key_remainder` a key known to start before the
text), and a token whose second half has not arrived yet (`hold_point`: where a growing text
may be shown up to). All are linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from acpd.tools.filters.safety import compile_pattern
from acpd.tools.filters.substrings import SubstringSet


@dataclass(frozen=True, slots=True)
class SecretPattern:
    kind: str
    """Human name used in the warning: "GitHub token"."""
    slug: str
    """Used in the placeholder: [REDACTED:github-token]."""
    regex: re.Pattern[str]
    triggers: tuple[str, ...]
    """Substrings one of which must occur for the regex to be worth running."""
    group: int = 0
    """The capture group holding the value (0: the whole match)."""


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str
    count: int


def _p(
    kind: str, slug: str, regex: str, triggers: Iterable[str], group: int = 0, flags: int = 0
) -> SecretPattern:
    return SecretPattern(kind, slug, re.compile(regex, flags), tuple(triggers), group)


_B = r"(?<![A-Za-z0-9_\-])"  # not glued to a longer token
_E = r"(?![A-Za-z0-9_\-])"

BUILTIN_PATTERNS: tuple[SecretPattern, ...] = (
    _p(
        "private key",
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[^-]|-(?!----END ))*(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        ["PRIVATE KEY"],
    ),
    _p(
        "Anthropic API key",
        "anthropic-key",
        _B + r"sk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_\-]{32,}",
        ["sk-ant-"],
    ),
    _p(
        "OpenAI API key",
        "openai-key",
        _B + r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])"
        r"[A-Za-z0-9_\-]{32,}" + _E,
        ["sk-"],
    ),
    _p(
        "AWS access key ID",
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
        ["AKIA", "ASIA", "ABIA", "ACCA"],
    ),
    _p(
        "AWS secret access key",
        "aws-secret-key",
        r"(?i:aws_?secret_?(?:access_?)?key)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ["ecret", "ECRET"],
        group=1,
    ),
    _p(
        "GitHub token",
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
        ["gh", "github_pat_"],
    ),
    _p("GitLab token", "gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}", ["glpat-"]),
    _p("Slack token", "slack-token", r"\bxox[abposr]-[A-Za-z0-9]{8,}-[A-Za-z0-9\-]{8,}", ["xox"]),
    _p(
        "Slack webhook",
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}",
        ["hooks.slack.com"],
    ),
    _p(
        "Stripe secret key",
        "stripe-key",
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}\b",
        ["_live_", "_test_"],
    ),
    _p("Google API key", "google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}" + _E, ["AIza"]),
    _p(
        "Google OAuth client secret",
        "google-oauth-secret",
        r"\bGOCSPX-[A-Za-z0-9_\-]{28}" + _E,
        ["GOCSPX-"],
    ),
    _p("npm token", "npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ["npm_"]),
    _p("Hugging Face token", "huggingface-token", r"\bhf_[A-Za-z0-9]{34,}\b", ["hf_"]),
    _p(
        "JWT",
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}" + _E,
        ["eyJ"],
    ),
    _p(
        "bearer token",
        "bearer-token",
        r"\b[Bb]earer\s+((?=[A-Za-z0-9._~+/\-]*\d)(?=[A-Za-z0-9._~+/\-]*[A-Za-z])"
        r"[A-Za-z0-9._~+/\-]{20,}=*)",
        ["earer"],
        group=1,
    ),
    _p(
        "password in URL",
        "url-password",
        r"://([^\s:/@\"'<>]{1,128}):((?![$<*%{])[^\s@/\"'<>]{1,256})@(?=[\w.\-\[])",
        ["://"],
        group=2,
    ),
    _p(
        "secret environment variable",
        "env-secret",
        r"(?m)^(?:export\s+)?[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY"
        r"|PRIVATE_KEY|ACCESS_KEY)[A-Z0-9_]*=[\"']?((?![$<*{])[^\s\"']{8,})",
        ["PASS", "ECRET", "TOKEN", "KEY"],
        group=1,
    ),
)


def custom_patterns(patterns: Iterable[str]) -> tuple[tuple[SecretPattern, ...], list[str]]:
    """`[tools.filters.security] extra_patterns`: checked like filter regexes. A pattern with a
    capture group redacts that group, else the whole match. Returns (patterns, warnings)."""
    out: list[SecretPattern] = []
    warnings: list[str] = []
    for i, source in enumerate(patterns, 1):
        try:
            regex = compile_pattern(source)
        except ValueError as exc:
            warnings.append(f"extra_patterns[{i}] skipped: {exc}")
            continue
        out.append(
            SecretPattern("custom secret pattern", "custom", regex, (), min(regex.groups, 1))
        )
    return tuple(out), warnings


class SecretScanner:
    """The built-in patterns plus configured ones, compiled once."""

    def __init__(self, extra: Iterable[SecretPattern] = ()) -> None:
        self.patterns = (*BUILTIN_PATTERNS, *extra)
        self.triggers = frozenset(t for p in self.patterns for t in p.triggers)
        """Every pattern's triggers: a text containing none of them needs only `always`."""
        self.always = any(not p.triggers for p in self.patterns)
        """A pattern without triggers (a configured one) runs on every text."""
        self._needles = SubstringSet(self.triggers)

    def present(self, text: str) -> set[str]:
        """The triggers occurring in `text` (one pass)."""
        return self._needles.present(text)

    def needs_scan(self, present: set[str]) -> bool:
        """Whether a text whose triggers (or a superset's) are `present` may hold a secret."""
        return self.always or not self.triggers.isdisjoint(present)

    def scan(
        self, text: str, present: set[str] | None = None
    ) -> tuple[str, list[SecretFinding]]:
        """Returns (text with values replaced by `[REDACTED:<slug>]`, findings by kind).

        `present`: the triggers occurring in `text` when the caller already knows them
        (a superset is fine); found here otherwise.
        """
        counts: dict[str, int] = {}
        if present is None:
            present = self.present(text)
        if not self.needs_scan(present):
            return text, []
        for pattern in self.patterns:
            if pattern.triggers and present.isdisjoint(pattern.triggers):
                continue
            text, n = _redact(pattern, text)
            if n:
                counts[pattern.kind] = counts.get(pattern.kind, 0) + n
        if KEY_TRIGGER in present:
            text, n = redact_key_tails(text)
            if n:
                counts["private key"] = counts.get("private key", 0) + n
        return text, [SecretFinding(kind, n) for kind, n in counts.items()]


def merge_findings(*groups: list[SecretFinding]) -> list[SecretFinding]:
    """Findings of several scans of the same output (raw and filtered): each kind once, with
    its largest count, in first-seen order."""
    counts: dict[str, int] = {}
    for group in groups:
        for f in group:
            counts[f.kind] = max(counts.get(f.kind, 0), f.count)
    return [SecretFinding(kind, n) for kind, n in counts.items()]


def _redact(pattern: SecretPattern, text: str) -> tuple[str, int]:
    placeholder = f"[REDACTED:{pattern.slug}]"
    if pattern.group == 0:
        return pattern.regex.subn(placeholder, text)
    group = pattern.group

    def replace(m: re.Match[str]) -> str:
        start, end = m.span(group)
        if start < 0:
            return m.group(0)
        whole = m.group(0)
        base = m.start(0)
        return whole[: start - base] + placeholder + whole[end - base :]

    return pattern.regex.subn(replace, text)


KEY_TRIGGER = "PRIVATE KEY"
KEY_PLACEHOLDER = "[REDACTED:private-key]"
_KEY_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_ARMOUR_LINE = re.compile(r"[A-Za-z0-9+/=]*\r?|[A-Za-z-]+: [^\n]*")
"""A line that can be inside a key's armour: base64 (or blank), or a `Proc-Type:` header."""


def redact_key_tails(text: str) -> tuple[str, int]:
    """Key lines before an END line whose BEGIN is not in the text (the front was cut off by a
    byte limit): replaced, back to the first line that cannot be armour. Linear: each END
    line walks back over its own block only. Returns (text, blocks redacted)."""
    out: list[str] = []
    done = 0
    count = 0
    for m in _KEY_END.finditer(text):
        start = m.start()
        if start < done or (start > 0 and text[start - 1] != "\n"):
            continue
        lines_start = start
        while lines_start > done:
            prev = text.rfind("\n", done, lines_start - 1) + 1
            prev = max(prev, done)
            if not _ARMOUR_LINE.fullmatch(text, prev, lines_start - 1):
                break
            lines_start = prev
        if lines_start == start:
            continue
        out.append(text[done:lines_start])
        out.append(KEY_PLACEHOLDER)
        done = m.end()
        count += 1
    if not count:
        return text, 0
    out.append(text[done:])
    return "".join(out), count


def key_open_at(text: str, pos: int) -> bool:
    """Whether a private key's BEGIN line before `pos` has no END line before `pos`: text
    from `pos` on is inside the key."""
    begin = text.rfind("-----BEGIN ", 0, pos)
    while begin >= 0 and not _KEY_BEGIN.match(text, begin):
        begin = text.rfind("-----BEGIN ", 0, begin)
    if begin < 0:
        return False
    return _KEY_END.search(text, begin, pos) is None


def redact_key_remainder(text: str) -> str:
    """`text` starts inside a private key (its BEGIN line was cut off): everything up to and
    including the END line, or all of it, is replaced."""
    m = _KEY_END.search(text)
    return KEY_PLACEHOLDER + (text[m.end() :] if m else "")


_B64 = re.compile(r"[A-Za-z0-9+/=]+")


def redact_cut_key_head(text: str) -> tuple[str, int]:
    """For output whose front was cut by someone else's byte limit (an editor terminal):
    when it starts with key armour lines (a partial line, then at least two base64 lines of
    one width between 40 and 80 characters, a PEM or OpenSSH body) and no END line ends
    them, the BEGIN line went with the cut: the run is replaced. Returns (text, 0 or 1)."""
    lines = text.split("\n", 1024)
    width = len(lines[1].rstrip("\r")) if len(lines) > 2 else 0
    if not 40 <= width <= 80 or not _B64.fullmatch(lines[0].rstrip("\r") or "A"):
        return text, 0
    run = 1
    while run < len(lines) - 1 and len(lines[run].rstrip("\r")) == width and _B64.fullmatch(
        lines[run].rstrip("\r")
    ):
        run += 1
    if run < 3:
        return text, 0
    if _B64.fullmatch(lines[run].rstrip("\r") or "-"):
        run += 1  # the key's last, shorter line
    rest = "\n".join(lines[run:]) if run < len(lines) else ""
    return KEY_PLACEHOLDER + ("\n" + rest if rest else ""), 1


HOLD_MAX = 8192
"""Longest trailing word a stream holds back; no credential is one word that long."""


def hold_point(text: str) -> int:
    """Where a text that is still growing may be shown up to: before its trailing word,
    which may be the first part of a credential whose pattern cannot match yet (a token
    split across two reads). All of it when it ends in whitespace."""
    if not text or text[-1].isspace():
        return len(text)
    start = max(len(text) - HOLD_MAX, 0)
    cut = max(text.rfind(c, start) for c in " \n\t\r\f\v") + 1
    return cut if cut > 0 or start == 0 else len(text)


def warning_line(findings: list[SecretFinding]) -> str | None:
    """`[security] 2 secrets redacted from this output (GitHub token, JWT): ...`"""
    if not findings:
        return None
    total = sum(f.count for f in findings)
    kinds = ", ".join(f.kind if f.count == 1 else f"{f.kind} x{f.count}" for f in findings)
    noun = "secret" if total == 1 else "secrets"
    return (
        f"[security] {total} {noun} redacted from this output ({kinds}). The values are hidden "
        "from the model, the editor and the logs; do not try to recover or print them."
    )


_DEFAULT = SecretScanner()


def scan_secrets(text: str) -> tuple[str, list[SecretFinding]]:
    """Redact with the built-in patterns only (see SecretScanner for configured ones)."""
    return _DEFAULT.scan(text)
