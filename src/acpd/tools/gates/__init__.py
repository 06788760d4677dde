"""The gates a call passes after the policy decision and before it runs (issue #13 item 4/6).

Order, inside the runner's decision step (tools/pipeline.py), each only ever tightening:
  1. OAP authorization rules (`[tools.authorization]`, authorization.py): merged after the
     permission rules and the shell policy; deny denies, ask asks, allow loosens nothing;
  2. the utility gate (`[tools.utility]`, utility.py): a model call scored below the
     threshold is not run, and a scoring error counts as low utility (fail-closed);
  3. the adversarial policy gate (`[tools.adversarial_policy]`, adversarial.py): the session's
     model judges the call against plain-language policies, ALLOW or DENY, strictly parsed;
     an error denies unless `fail_open`.
A call the policy already denies goes through none of them (nothing to tighten, no model
call spent). A gate refusal is a policy refusal: the card shows it, the model reads a
`[tool_error]` (PolicyBlocked) saying which gate and why, the audit line says
`decided_by` utility / policy_gate / authorization.

Every audit line carries the call's phase (phases.py) and, under `gates`, what each gate that
looked at the call found (score, verdict, matched rules, missing paths).

After a call ran, hallucination warnings (`[tools.hallucination]`, hallucination.py) are
appended to what the model reads; they never block.
"""
