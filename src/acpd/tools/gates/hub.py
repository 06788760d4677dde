"""`Gates`: the hook the runner calls (see the package docstring for the order and rules)."""


from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from acpd.tools.gates.adversarial import PolicyJudge
from acpd.tools.gates.authorization import Authorization, strictest
from acpd.tools.gates.config import (
    AdversarialPolicyConfig,
    AuthorizationConfig,
    HallucinationConfig,
    LegacyConfig,
    UtilityConfig,
)
from acpd.tools.gates.hallucination import missing_paths, warning
from acpd.tools.gates.phases import user_requested
from acpd.tools.gates.utility import UtilityScorer
from acpd.tools.permissions import Decision
from acpd.tools.spec import Effect, ToolSpec

if TYPE_CHECKING:
    from acpd.tools.calls import Call, CallResult
    from acpd.tools.pipeline import CallEnv

class Gates:
    def __init__(
        self, utility: UtilityConfig | None = None,
        adversarial: AdversarialPolicyConfig | None = None,
        authorization: AuthorizationConfig | None = None,
        hallucination: HallucinationConfig | None = None,
        legacy: LegacyConfig | None = None,
    ) -> None:
        self.utility = UtilityScorer(utility or UtilityConfig())
        self.judge = PolicyJudge(adversarial or AdversarialPolicyConfig())
        self.authorization = Authorization(authorization or AuthorizationConfig())
        self.hallucination = (hallucination or HallucinationConfig()).enabled
        self.legacy = legacy or LegacyConfig()

    def legacy_for(self, model: str) -> bool:
        """Whether `model` (`kind:model`) calls tools through its text (`[tools.legacy]`)."""
        import fnmatch

        return any(fnmatch.fnmatchcase(model, g) for g in self.legacy.models)

    def begin_turn(self, session: str, history: Sequence[Any]) -> None:
        """A turn starts (`history`: the session's messages, the user's prompt last). A
        conversation that got shorter (/clear, a compression) no longer holds the earlier
        outputs, so repeating a call is useful again; and what the user's prompt spells out
        is a call the user asked for."""
        if not self.utility.config.enabled:
            # Nothing to score with: keep nothing (the prompt alone may be 64 KB a session).
            self.utility.forget(session)
            return
        prompt = next((m.text for m in reversed(history) if m.role == "user"), "")
        self.utility.begin_turn(session, len(history), prompt)

    def forget(self, session: str) -> None:
        """The session is over: what the gates kept for it goes."""
        self.utility.forget(session)

    def status(self, model: str | None) -> str:
        """`/status` lines for the gates that are on ("" when none is)."""
        lines: list[str] = []
        judge = self.judge.config
        if judge.enabled:
            lines.append(f"policy gate: judge {model or 'none (calls are denied)'}, "
                         f"{len(judge.policies)} policies, fail_open={judge.fail_open}")
        if self.utility.config.enabled:
            lines.append(f"utility gate: threshold {self.utility.config.threshold:g}")
        if self.authorization.enabled:
            lines.append(f"authorization: {len(self.authorization.rules)} rules")
        if model is not None and self.legacy_for(model):
            lines.append("tool invocation: legacy (fenced blocks in the model's text)")
        if self.hallucination:
            lines.append("hallucination warnings: on")
        return "".join(f"\n{line}" for line in lines)

    async def decide(self, call: Call, spec: ToolSpec, args: dict[str, Any], parsed: Any,
                     decision: Decision, env: CallEnv, remembered: bool | None) -> Decision:
        """The decision after the gates (never looser than `decision`); a gate that denies
        names itself in `call.decided_by`. Raises only cancellation. `remembered` is the
        user's "always" answer for this call, if any."""
        if decision.verdict == "deny":
            return decision
        decision = self._authorize(call, spec, args, parsed, decision, env, remembered)
        if decision.verdict == "deny" or user_requested(call.caller):
            return decision
        refusal = self._score(call, spec, args, env)
        if refusal is None:
            refusal = await self._judge(call, spec, args, env)
        if refusal is not None:
            call.decided_by = refusal[0]
            return Decision("deny", refusal[1], "policy", decision.shell)
        if self.hallucination:
            missing = missing_paths(spec, parsed, args, env.cwd)
            if missing:
                call.gates["hallucination"] = missing
        return decision

    def after(self, call: Call, spec: ToolSpec, result: CallResult, env: CallEnv) -> CallResult:
        """A call that was run: it counts for the utility of the next ones, and the model
        reads the hallucination warning, if any."""
        if self.utility.config.enabled and not user_requested(call.caller):
            changes = spec.effect is not Effect.READ_ONLY
            self.utility.record(env.session_id, spec.id, call.args, changes)
        missing = call.gates.get("hallucination")
        if missing:
            result.text += warning(missing)
        return result

    def _authorize(self, call: Call, spec: ToolSpec, args: dict[str, Any], parsed: Any,
                   decision: Decision, env: CallEnv, remembered: bool | None) -> Decision:
        if not self.authorization.enabled:
            return decision
        paths = _paths(spec, parsed, args, env.cwd)
        found = self.authorization.matches(spec.id, spec.name, args, paths, env.cwd)
        if not found:
            return decision
        call.gates["authorization"] = [m.to_json() for m in found]
        effect = strictest(found)
        rule = next(m for m in found if m.rule.effect == effect)
        where = f"[tools.authorization] rule {rule.index} ({rule.rule.effect} {rule.rule.tool})"
        if effect == "deny":
            call.decided_by = "authorization"
            return Decision("deny", f"denied by {where}", "policy", decision.shell)
        if effect == "ask" and decision.verdict == "allow" and remembered is not True:
            return Decision("ask", f"{where} asks for approval", "policy", decision.shell)
        return decision

    def _score(self, call: Call, spec: ToolSpec, args: dict[str, Any],
               env: CallEnv) -> tuple[str, str] | None:
        scorer = self.utility
        if not scorer.config.enabled or scorer.exempt(spec.id, spec.name):
            return None
        threshold = scorer.config.threshold
        if scorer.asked_for(env.session_id, args):
            call.gates["utility"] = {"user_requested": True}
            return None
        try:
            score = scorer.score(env.session_id, spec.id, args)
        except Exception as exc:  # fail-closed: an unscorable call is a low-utility call
            why = str(exc)[:200] or type(exc).__name__
            call.gates["utility"] = {"error": why, "threshold": threshold, "skipped": True}
            return "utility", (
                f"not run: its utility could not be scored ({why}), and an unscored call "
                "counts as low utility ([tools.utility])"
            )
        changes = spec.effect is not Effect.READ_ONLY
        skip = score.value < threshold and not changes
        call.gates["utility"] = {**score.to_json(), "threshold": threshold, "skipped": skip}
        if not skip:
            return None
        repeat = " (an identical call already ran and nothing changed since: use its result)" \
            if score.redundancy >= 1.0 else ""
        return "utility", (
            f"not run: its utility score {score.value:.2f} is below the threshold "
            f"{threshold:g}{repeat} ([tools.utility])"
        )

    async def _judge(self, call: Call, spec: ToolSpec, args: dict[str, Any],
                     env: CallEnv) -> tuple[str, str] | None:
        config = self.judge.config
        if not config.enabled or call.phase not in config.phases:
            return None
        if self.judge.exempt(spec.id, spec.name):
            call.gates["adversarial_policy"] = {"verdict": "allow", "judge": "exempt"}
            return None
        found = await self.judge.judge(env.judge, spec.name, call.phase, args)
        call.gates["adversarial_policy"] = found.to_json(config.fail_open)
        if found.verdict == "allow":
            return None
        if found.error is not None:
            return "policy_gate", (
                f"the policy judge gave no valid verdict ({found.error}); denied because "
                "[tools.adversarial_policy] fail_open is false"
            )
        return "policy_gate", (
            "the policy judge found that this call breaks the operator's policies "
            "([tools.adversarial_policy]); do not retry it in another form"
        )


def _paths(spec: ToolSpec, parsed: Any, args: dict[str, Any], cwd: str) -> list[str]:
    from acpd.tools.gates.hallucination import command_paths

    if spec.kind == "execute" and isinstance(args.get("command"), str):
        return command_paths(args["command"])
    try:
        return list(spec.locations(parsed, cwd))
    except Exception:
        return []


def build_gates(tools: Any) -> Gates:
    """The gates from `[tools]` (daemon/config.py's ToolsConfig)."""
    return Gates(tools.utility, tools.adversarial_policy, tools.authorization,
                 tools.hallucination, tools.legacy)
