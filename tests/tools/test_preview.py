"""The bounds of a diff preview (tools/preview.py): whole when small, the changed lines with
context when large (said as an excerpt), a note when even that is too large; never a key's
body without its armour."""

from __future__ import annotations

import pytest

import acpd.tools.filters  # noqa: F401  (before secrets, as the daemon imports them)
from acpd.tools import preview
from acpd.tools.preview import changed_lines, diff_content, fingerprint
from acpd.tools.secrets import scan_secrets
from acpd.tools.spec import DiffItem, TextItem


def lines(n: int, fmt: str = "line {}\n") -> list[str]:
    return [fmt.format(i) for i in range(n)]


def test_a_small_change_is_shown_whole() -> None:
    (item,) = diff_content("/w/a", "x\n", "y\n", existed=True)
    assert item == DiffItem("/w/a", "x\n", "y\n")
    (new,) = diff_content("/w/b", None, "y\n", existed=False)
    assert new == DiffItem("/w/b", None, "y\n")


@pytest.mark.parametrize("where", [0, 5000, 9999])
def test_a_large_file_shows_the_changed_lines_with_context(
    monkeypatch: pytest.MonkeyPatch, where: int
) -> None:
    monkeypatch.setattr(preview, "DIFF_MAX_CHARS", 1000)
    old = lines(10_000)
    new = [*old[:where], "changed\n", *old[where + 1:]]
    diff, note = diff_content("/w/big", "".join(old), "".join(new), existed=True)
    assert isinstance(diff, DiffItem) and isinstance(note, TextItem)
    first = max(0, where - 3)
    assert diff.old_text == "".join(old[first:where + 4])
    assert diff.new_text == "".join(new[first:where + 4])
    assert f"Excerpt: lines {first + 1}-{min(10_000, where + 4)} of 10000" in note.text


def test_appended_and_removed_lines_are_in_the_excerpt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preview, "DIFF_MAX_CHARS", 1000)
    old = lines(5000)
    found = changed_lines("".join(old), "".join([*old, "tail\n"]))
    assert found is not None and found[4].endswith("tail\n") and found[3] == "".join(old[-3:])
    found = changed_lines("".join(old), "".join(old[:100] + old[101:]))
    assert found is not None and "line 100\n" in found[3] and "line 100\n" not in found[4]


def test_a_change_too_large_even_as_an_excerpt_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preview, "DIFF_MAX_CHARS", 1000)
    (note,) = diff_content("/w/big", "".join(lines(5000)), "".join(lines(5000, "x{}\n")),
                           existed=True)
    assert isinstance(note, TextItem) and "not shown" in note.text
    assert "over the preview limit of 1000 characters" in note.text


def test_an_excerpt_that_starts_inside_a_private_key_never_shows_its_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(preview, "DIFF_MAX_CHARS", 2000)
    body = ["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"] * 30
    key = ["-----BEGIN RSA PRIVATE KEY-----\n", *body, "-----END RSA PRIVATE KEY-----\n"]
    old = [*lines(200), *key, *lines(200)]
    at = 200 + 20  # a line inside the key body changes
    new = [*old[:at], "MIIEXXXX\n", *old[at + 1:]]
    diff, _note = diff_content("/w/k", "".join(old), "".join(new), existed=True)
    assert isinstance(diff, DiffItem) and diff.old_text is not None
    for text in (diff.old_text, diff.new_text):
        assert "MIIEowIBAAKCAQ" not in scan_secrets(text)[0]


def test_a_file_whose_text_is_hidden_is_described_not_shown() -> None:
    diff, note = diff_content("/w/.key", None, "new\n", existed=True, hidden="deny_read")
    assert diff == DiffItem("/w/.key", "[the current content is not shown: deny_read]\n", "new\n")
    assert isinstance(note, TextItem) and "not shown (deny_read)" in note.text
    assert "4 bytes, 1 lines" in note.text


def test_fingerprints_tell_text_and_identity_apart() -> None:
    assert fingerprint("a", None) != fingerprint("b", None)
    assert fingerprint(None, None) is None
    assert fingerprint("a", None) == fingerprint("a", None)
