"""The checkers' outputs, recorded from real runs (tests/fixtures), parsed into diagnostics;
noise around them (progress lines, npm notices, broken JSON) is skipped, never fatal."""

from __future__ import annotations

from pathlib import Path

from acpd.tools.diagnostics.checkers import detect
from acpd.tools.diagnostics.parsers import (
    parse_cargo,
    parse_eslint,
    parse_mypy,
    parse_ruff,
    parse_tsc,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_cargo_check_and_clippy_json() -> None:
    check = parse_cargo(fixture("diagnostics/cargo-check.jsonl"))
    assert [(d.severity, d.file, d.line, d.col, d.rule) for d in check] == [
        ("error", "src/main.rs", 2, 18, "E0308")]
    assert check[0].message == "mismatched types"
    clippy = parse_cargo(fixture("diagnostics/cargo-clippy.jsonl"), "clippy")
    assert {d.rule for d in clippy} == {"unused_variables", "clippy::needless_return"}
    assert all(d.severity == "warning" and d.source == "clippy" for d in clippy)
    noisy = "   Compiling x\n{broken json\n" + fixture("diagnostics/cargo-check.jsonl")
    assert parse_cargo(noisy) == check


def test_tsc_lines() -> None:
    recorded = parse_tsc(fixture("diagnostics/tsc.txt"))
    assert [(d.file, d.line, d.col, d.rule) for d in recorded] == [
        ("src/app.ts", 1, 7, "TS2322")]
    captured = parse_tsc(fixture("outputs/tsc.txt"))  # with an npm warning before it
    assert len(captured) == 50 and captured[0].line == 2 and captured[0].col == 9
    assert captured[0].message == "Type 'string' is not assignable to type 'number'."


def test_eslint_json() -> None:
    found = parse_eslint("npm warn something\n" + fixture("diagnostics/eslint.json"))
    assert [(d.severity, d.file, d.line, d.col, d.rule) for d in found] == [
        ("warning", "/tmp/jsrec/src/app.js", 2, 12, "eqeqeq")]


def test_mypy_text() -> None:
    found = parse_mypy(fixture("outputs/mypy.txt"))
    assert len(found) == 60  # the summary line is not a diagnostic
    assert (found[0].file, found[0].line, found[0].rule) == ("pkg/core.py", 13, "no-any-return")
    with_cols = parse_mypy("a.py:3:5: error: Bad thing  [misc]\na.py:4: note: see this\n")
    assert [(d.line, d.col, d.rule) for d in with_cols] == [(3, 5, "misc")]


def test_ruff_json_and_json_lines() -> None:
    line = ('{"code":"F401","filename":"/w/a.py","location":{"column":8,"row":1},'
            '"message":"`os` imported but unused"}')
    assert parse_ruff(line)[0].rule == "F401"
    assert parse_ruff(f"[{line}]")[0].col == 8
    syntax = '{"code":null,"filename":"/w/b.py","location":{"column":1,"row":2},"message":"x"}'
    assert parse_ruff(syntax)[0].severity == "error"


def test_nothing_in_the_output_can_raise() -> None:
    junk = '[1, "x", {"filePath": 5, "messages": [7, {"line": "x"}]}]\n{"reason": 3}\n\x00'
    for parse in (parse_cargo, parse_ruff, parse_mypy, parse_tsc, parse_eslint):
        parse(junk)


def test_detection_from_the_workspace(tmp_path: Path) -> None:
    assert detect(str(tmp_path)) == []
    (tmp_path / "Cargo.toml").write_text("[package]\n")
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\n[tool.mypy]\n")
    (tmp_path / "tsconfig.json").write_text("{}")
    (tmp_path / "eslint.config.mjs").write_text("export default [];")
    assert detect(str(tmp_path)) == ["cargo", "ruff", "mypy", "tsc", "eslint"]
    (tmp_path / "pyproject.toml").write_text("not toml [")
    assert detect(str(tmp_path)) == ["cargo", "tsc", "eslint"]
