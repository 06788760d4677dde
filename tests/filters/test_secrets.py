"""Each credential kind is redacted from the model text and the raw copy, with a warning that
names the kind; look-alikes (SHAs, UUIDs, integrity hashes, base64 blobs) are left alone.

Secret-shaped values are assembled at run time so the repository holds none.
"""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from acpd.tools.filters import FilterSettings, build_filter_set
from acpd.tools.secrets import SecretScanner, custom_patterns, scan_secrets


def _b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


ALNUM = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY"  # 32 mixed characters, reused to build tokens
JWT = ".".join(
    [
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "42", "exp": 1}),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ]
)
PEM = "\n".join(
    [
        "-----BEGIN " + "RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAx" + ALNUM,
        ALNUM + ALNUM,
        "-----END " + "RSA PRIVATE KEY-----",
    ]
)

CASES: list[tuple[str, str, str]] = [
    # (kind in the warning, the line, the secret value that must disappear)
    ("OpenAI API key", "OPENAI key: {v}", "sk-proj-" + ALNUM + "Zz9"),
    ("Anthropic API key", "key={v}", "sk-ant-api03-" + ALNUM + ALNUM + "-AAAA"),
    ("AWS access key ID", "aws_access_key_id = {v}", "AKIA" + "IOSFODNN7EXAMPL1"),
    ("AWS secret access key", "aws_secret_access_key = {v}", ALNUM[:28] + "wJalrXUt/K7M"),
    ("GitHub token", "remote: token {v}", "ghp_" + ALNUM + "abcd"),
    ("GitHub token", "GH={v}x", "github_pat_11ABCDEFG0" + ALNUM + "_" + ALNUM),
    ("Slack token", "slack {v}", "xoxb-" + "123456789012-1234567890123-" + ALNUM[:24]),
    ("Stripe secret key", "stripe: {v}", "sk_" + "live_" + ALNUM[:24]),
    ("Google API key", "maps key {v}", "AIza" + "Sy" + ALNUM[:30] + "_-x"),
    ("JWT", "cookie session={v}; Path=/", JWT),
    ("bearer token", "Authorization: Bearer {v}", "a1" + ALNUM + ".x-y_z"),
    ("password in URL", "DATABASE_URL=postgres://app:{v}@db.internal:5432/shop", "S3cr3t-pa55"),
    ("private key", "{v}", PEM),
    ("secret environment variable", "export STRIPE_WEBHOOK_SECRET={v}", "whsec_" + ALNUM),
]


@pytest.mark.parametrize(
    ("kind", "line", "value"), CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)]
)
def test_each_kind_is_redacted_with_a_warning(kind: str, line: str, value: str) -> None:
    filters = build_filter_set()
    raw = "starting\n" + line.format(v=value) + "\ndone\n"
    result = filters.apply("cat deploy.env", raw, 0)
    assert value not in result.text
    assert result.raw_redacted is not None and value not in result.raw_redacted
    assert kind in result.secret_kinds
    assert any(kind in w and w.startswith("[security]") for w in result.warnings)
    assert result.text.splitlines()[-1].startswith("[security]")
    assert "starting" in result.text and "done" in result.text  # only the value goes


def test_secret_in_a_line_the_filter_removed_is_still_reported() -> None:
    token = "ghp_" + ALNUM + "wxyz"
    raw = "".join(f"Collecting pkg{i}\n" for i in range(20))
    raw += f"Collecting https://x:{token}@github.com/acme/private.git\nSuccessfully installed\n"
    result = build_filter_set().apply("pip install -r req.txt", raw, 0)
    assert result.rule_name == "pip-install"
    assert token not in result.text
    assert "GitHub token" in result.text
    assert result.raw_redacted is not None and token not in result.raw_redacted


LOOKALIKES = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "Merge: 1a2b3c4 5d6e7f8",
    "request_id=123e4567-e89b-12d3-a456-426614174000",
    '"integrity": "sha512-' + base64.b64encode(hashlib.sha512(b"x").digest()).decode() + '",',
    'resolved "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz#' + "a" * 40 + '"',
    "sha256:" + hashlib.sha256(b"layer").hexdigest(),
    "data:image/png;base64," + base64.b64encode(bytes(range(200))).decode(),
    "https://user@github.com/acme/repo.git",
    "git@github.com:acme/repo.git",
    "http://localhost:8080/health",
    "postgres://app:${DB_PASSWORD}@db:5432/shop",
    "Bearer authentication is required for this endpoint",
    "Authorization: Bearer <token>",
    "the sk-learn package and task-runner-configuration-template-v2",
    "sklearn==1.5.2 scikit-learn-intelex",
    "TOKEN_TTL=3600",
    "GITHUB_TOKEN=$GITHUB_TOKEN",
    "password: str = Field(min_length=8)",
    "eyJhbGciOiJIUzI1NiJ9 is only a header",
    "AKIAIOSFODNN7 short",
    "-----BEGIN PUBLIC KEY-----",
    "Fingerprint: SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
]


def test_lookalikes_are_untouched() -> None:
    text = "\n".join(LOOKALIKES) + "\n"
    redacted, findings = scan_secrets(text)
    assert findings == []
    assert redacted == text
    result = build_filter_set().apply("cat notes.txt", text, 0)
    assert result.warnings == () and result.raw_redacted is None


def test_extra_patterns_from_config() -> None:
    settings = FilterSettings(extra_patterns=(r"acme_live_([0-9a-f]{16})", "(unbalanced"))
    filters = build_filter_set(settings=settings)
    assert any("extra_patterns[2]" in w for w in filters.warnings)
    result = filters.apply("env", "KEY acme_live_0123456789abcdef\n", 0)
    assert "0123456789abcdef" not in result.text
    assert "acme_live_[REDACTED:custom]" in result.text
    assert "custom secret pattern" in result.text


def test_custom_pattern_without_group_redacts_whole_match() -> None:
    patterns, warnings = custom_patterns([r"INTERNAL-\d{6}"])
    assert warnings == []
    text, findings = SecretScanner(patterns).scan("id INTERNAL-123456 ok")
    assert text == "id [REDACTED:custom] ok" and findings[0].count == 1


def test_security_pass_can_be_disabled() -> None:
    token = "ghp_" + ALNUM + "wxyz"
    filters = build_filter_set(settings=FilterSettings(security_enabled=False))
    assert token in filters.apply("echo", token, 0).text
