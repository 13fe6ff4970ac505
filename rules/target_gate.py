"""EAG5xx target-gate: the speculative config's model_type allow-list must accept the target."""

from __future__ import annotations

from collections.abc import Iterator

from eagle3lint.findings import Finding, Repair, Severity
from eagle3lint.rule import Code, Example, Rule, RuleContext
from eagle3lint.targets import Target


class TargetGate(Rule):
    slug = "target-gate"
    codes = (
        Code(
            "EAG501",
            "model-type-rejected",
            "The EAGLE-3 model_type allow-list rejects the target's text model_type.",
            Severity.ERROR,
            fixable=True,
        ),
        Code(
            "EAG502",
            "model-type-gate",
            "Lists what the allow-list accepts when the target's model_type is not known.",
            Severity.INFO,
        ),
    )

    valid = (
        Example(
            era="e2_stub",
            model_type="llama4_text",
            source="class Llama4ForCausalLM:\n    pass\n",
        ),
        Example(era="e4_nogate", model_type="kimi_k2", source="class KForCausalLM:\n    pass\n"),
    )
    invalid = (
        Example(
            era="e2_stub",
            model_type="kimi_k2",
            expect=("EAG501",),
            source="class KimiForCausalLM:\n    pass\n",
        ),
    )

    def check(self, target: Target, ctx: RuleContext) -> Iterator[Finding]:
        gate = ctx.contract.gate
        if gate is None:
            return
        accepted = ", ".join(repr(e) for e in gate.entries)
        methods = "/".join(gate.methods) or "eagle3"
        # Reported on the target's class (what the user edits and pre-commit passes); the
        # message and the repair point at the gate itself.
        path, cls = ctx.path(target.ref), target.ref.cls
        where = f"{gate.path}:{gate.line}"
        model_type = ctx.model_type_for(target)
        if model_type is None:
            yield self.report(
                "EAG502",
                f"For method {methods} vLLM accepts a target only if its text config's "
                f"model_type contains one of: {accepted} ({where}). Pass --hf-config or "
                f"--model-type to check {target.arch}.",
                path,
                cls.line,
                cls.column,
            )
            return
        if gate.accepts(model_type):
            return
        yield self.report(
            "EAG501",
            f"model_type {model_type!r} matches none of {accepted}: vLLM rejects "
            f"{target.arch} for {methods} when the speculative config is built "
            f"('{methods.split('/')[0].capitalize()} is only supported for [...] models', "
            f"{where}).",
            path,
            cls.line,
            cls.column,
            hint=f"Add {model_type!r} to {gate.variable or 'the allow-list'}.",
            repair=Repair.make("add-gate-entry", gate.path, model_type=model_type),
        )


RULES = [TargetGate]
