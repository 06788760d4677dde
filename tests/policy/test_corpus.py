"""The shared corpus against the reference policy: both rates, printed, and required at 100 %."""

from __future__ import annotations

import io
import json

from acpd.policy.cli import run_corpus
from acpd.policy.cli import test_corpus as cli_test_corpus
from acpd.policy.engine import CompiledPolicy

from .conftest import CORPUS, REFERENCE


def _lines() -> list[dict[str, object]]:
    return [json.loads(x) for x in CORPUS.read_text("utf-8").splitlines() if x.strip()]


def test_corpus_rates(reference: CompiledPolicy, workspace: str) -> None:
    lines = _lines()
    assert len(lines) == 260
    res = run_corpus(reference, lines, workspace)
    print(f"\nattacks at least as strict as expected: {res['attacks_ok']}/{res['attacks']}")
    print(f"benign lines allowed: {res['benign_ok']}/{res['benign']}")
    print(f"design_fp lines denied as designed: {res['design_fp_ok']}/{res['design_fp']}")
    # the corpus README speaks of five design_fp lines; the file marks four
    assert (res["attacks"], res["benign"], res["design_fp"]) == (204, 52, 4)
    assert res["failures"] == [], json.dumps(res["failures"], indent=1)


def test_cli_test_command() -> None:
    out = io.StringIO()
    assert cli_test_corpus(CORPUS, config=REFERENCE, out=out) == 0
    text = out.getvalue()
    assert "attacks at least as strict as expected:" in text and "(100.0 %)" in text


def test_every_attack_stays_strict_under_untrusted(reference: CompiledPolicy,
                                                   workspace: str) -> None:
    for item in _lines():
        if item["expect"] == "allow":
            continue
        d = reference.judge(str(item["cmd"]), cwd=workspace, trust="untrusted")
        assert d.verdict == "deny", item["cmd"]
