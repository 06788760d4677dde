"""The v1 additions' pure rules, on real directories and real data: extra roots, titles,
costs, form answers, images."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from acpd.daemon.config import PriceConfig
from acpd.daemon.elicitation import checked_answer
from acpd.daemon.image_models import image_capability
from acpd.daemon.images import prompt_images
from acpd.daemon.roots import check_roots
from acpd.daemon.session_info import TITLE_CHARS, rfc3339, title_from_prompt
from acpd.daemon.usage import SessionCost, call_cost
from acpd.protocol.errors import RpcError
from acpd.providers.base import UsageEvent
from tests.providers.test_e2e_images import PNG

# --- roots -------------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    cwd = home / "code" / "app"
    lib = home / "code" / "lib"
    for d in (cwd, lib, home / ".ssh", home / ".config" / "acpd"):
        d.mkdir(parents=True)
    return {"home": home, "cwd": cwd, "lib": lib}


def roots(tree: dict[str, Path], *given: object) -> tuple[str, ...]:
    home = tree["home"]
    return check_roots(list(given), str(tree["cwd"]), deny_read=("~/.ssh/**",),
                       protected=(str(home / ".config" / "acpd"),), home=str(home))


def test_a_sibling_root_is_kept_as_its_real_path(tree: dict[str, Path]) -> None:
    link = tree["home"] / "lib-link"
    link.symlink_to(tree["lib"])
    assert roots(tree, str(link), str(tree["lib"]) + "/", str(tree["lib"])) == (
        os.path.realpath(tree["lib"]),)
    assert roots(tree, str(tree["cwd"] / ".")) == ()  # the cwd itself adds nothing


@pytest.mark.parametrize("bad", [
    "relative/dir", "", "   ", "/", "//", "/tmp", "/etc", "/proc/self", "/usr/lib",
    "with\0nul", 5, None,
])
def test_bad_values_are_refused(tree: dict[str, Path], bad: object) -> None:
    with pytest.raises(RpcError) as caught:
        roots(tree, bad)
    assert caught.value.code == -32602 and "additionalDirectories" in caught.value.message


@pytest.mark.parametrize("place", [
    "home", "home/code", "home/.ssh", "home/.config", "home/.config/acpd", "missing",
    "home/code/app/..", "link-to-home", "link-to-ssh", "home/code/lib/.git",
    "home/code/lib/.git/hooks",
])
def test_places_that_would_widen_or_expose_are_refused(tree: dict[str, Path], place: str) -> None:
    home = tree["home"]
    (tree["lib"] / ".git" / "hooks").mkdir(parents=True)
    (home / "link-to-home").symlink_to(home)
    (home / "link-to-ssh").symlink_to(home / ".ssh")
    path = str(home.parent / place) if place.startswith("home") else str(home / place)
    with pytest.raises(RpcError):
        roots(tree, path)


def test_too_many_and_not_a_list_are_refused(tree: dict[str, Path]) -> None:
    with pytest.raises(RpcError):
        roots(tree, *[str(tree["lib"])] * 40)
    with pytest.raises(RpcError):
        check_roots(str(tree["lib"]), str(tree["cwd"]))


# --- titles and times -------------------------------------------------------------------------


def test_titles_are_one_short_redacted_line() -> None:
    token = "sk-proj-" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7" * 2
    title = title_from_prompt(f"\n\n\tuse\u202e key {token} to deploy " + "x " * 80)
    assert title is not None and token not in title and "\u202e" not in title
    assert title.startswith("use key") and len(title) <= TITLE_CHARS
    assert title_from_prompt("\n \t\n") is None
    assert rfc3339(0) == "1970-01-01T00:00:00.000Z"


# --- costs -------------------------------------------------------------------------------------


def test_costs_add_up_and_stay_unknown_once_unknown() -> None:
    total = SessionCost()
    assert total.wire() is None
    total.add(0.1, "USD")
    total.add(0.2, "USD")
    assert total.wire() == {"amount": pytest.approx(0.3), "currency": "USD"}
    total.add(0.1, "EUR")  # two currencies do not make one total
    assert total.wire() is None
    total.add(1.0, "EUR")
    assert total.wire() is None
    assert SessionCost.from_dict({"amount": "12", "currency": "USD"}).wire() is None
    assert SessionCost.from_dict({"amount": True, "currency": "USD"}).wire() is None


def test_a_call_is_priced_only_when_every_token_has_a_price() -> None:
    price = PriceConfig(input_per_mtok=1.0, output_per_mtok=2.0)
    assert call_cost(UsageEvent(1000, 500), price) == (pytest.approx(0.002), "USD")
    assert call_cost(UsageEvent(1000, 500, cache_read_tokens=10), price)[0] is None
    assert call_cost(UsageEvent(1000, 500, cost=0.5), None) == (0.5, "USD")
    assert call_cost(UsageEvent(1000, 500), None)[0] is None


# --- forms -------------------------------------------------------------------------------------


SCHEMA = {"type": "object", "required": ["answer"], "properties": {
    "answer": {"type": "string", "enum": ["a", "b"]}, "count": {"type": "integer"}}}


@pytest.mark.parametrize(("answer", "action"), [
    ({"action": "accept", "content": {"answer": "a"}}, "accept"),
    ({"action": "accept", "content": {"answer": "a", "count": 2}}, "accept"),
    ({"action": "accept", "content": {"answer": "z"}}, "invalid"),
    ({"action": "accept", "content": {"answer": "a", "count": True}}, "invalid"),
    ({"action": "accept", "content": {"answer": "a", "extra": "x"}}, "invalid"),
    ({"action": "accept", "content": {}}, "invalid"),
    ({"action": "accept", "content": ["a"]}, "invalid"),
    ({"action": "decline"}, "decline"),
    ({"action": "cancel"}, "cancel"),
    ({"action": "_custom"}, "invalid"),
    ("accept", "invalid"),
])
def test_form_answers_are_checked(answer: object, action: str) -> None:
    assert checked_answer(answer, SCHEMA).action == action


# --- images ------------------------------------------------------------------------------------


def test_images_are_checked_only_for_models_that_take_them() -> None:
    block = {"type": "image", "mimeType": "image/png", "data": PNG}
    assert prompt_images([block], "scripted:x", ["openai:*"], 1 << 20) is None
    [part] = prompt_images([block], "openai:gpt-4o", ["openai:gpt-4o*"], 1 << 20) or []
    assert part.mime_type == "image/png" and base64.b64decode(part.data).startswith(b"\x89PNG")
    webp_lie = {"type": "image", "mimeType": "image/webp",
                "data": base64.b64encode(b"RIFF\0\0\0\0WAVEfmt ").decode()}
    with pytest.raises(RpcError):
        prompt_images([webp_lie], "openai:gpt-4o", ["openai:*"], 1 << 20)
    with pytest.raises(RpcError):
        prompt_images([block] * 21, "openai:gpt-4o", ["openai:*"], 1 << 20)


def test_the_initialize_capability_reads_the_config_without_failing(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[agent]\nmodel = "openai:gpt-4o"\n')
    assert image_capability(str(config), None) is True
    assert image_capability(str(config), "openai:llama3") is False
    config.write_text("not toml [[[")
    assert image_capability(str(config), None) is False
    assert image_capability(str(tmp_path / "none.toml"), "anthropic:claude-sonnet-4-5") is True


def test_stored_costs_round_trip() -> None:
    from acpd.daemon.settings import SessionSettings

    fresh = SessionSettings.from_dict({})
    fresh.cost.add(0.25, "USD")
    assert fresh.cost.wire() == {"amount": 0.25, "currency": "USD"}
    again = SessionSettings.from_dict(fresh.to_dict())
    assert again.cost.wire() == {"amount": 0.25, "currency": "USD"}
    unknown = SessionCost(None, None)
    assert SessionCost.from_dict(unknown.to_dict()).wire() is None



@pytest.mark.parametrize("text", [
    'agent.model = "openai:gpt-4o"\n',
    'agent = { model = "openai:gpt-4o" }\n',
    '[agent]\n"model" = "openai:gpt-4o"\n',
    '[agent]\nmodel = "openai:gpt\\u002d4o"\n',
    '[agent]\nsystem_prompt = """\nmodel = "x"\n"""\nmodel = "openai:gpt-4o"\n',
])
def test_every_toml_form_of_the_model_is_read(text: str, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(text)
    assert image_capability(str(config), None) is True
