"""EAG5xx target-gate: the speculative config's model_type allow-list must accept the target."""

from __future__ import annotations

from collections.abc import Iterator

from eagle3lint.api import (
    DECIDE_WITH_MODEL_TYPE,
    AddGateEntry,
    Code,
    Example,
    Expected,
    Explanation,
    Finding,
    Rule,
    RuleContext,
    Severity,
    Target,
    Unverified,
)

_EAG501 = Explanation(
    runtime="When the speculative config is built, before any weight is loaded, "
    "`SpeculativeConfig`'s validator checks the target's text `model_type` (the text sub-config's "
    "for a multimodal model, `hf_text_config.model_type`) against an allow-list. The test is a "
    "substring test: `kimi_k2` accepts `kimi_k25`, `qwen` accepts `qwen3_moe`.",
    error="```text\nValueError: Eagle3 is only supported for ['llama', 'qwen', 'minicpm', "
    "'gpt_oss', 'hunyuan_vl', 'hunyuan_v1_dense', 'afmoe'] models. Got "
    "self.target_model_config.hf_text_config.model_type='kimi_k2'\n```\n(the list of the "
    "release; 0.17.0-0.21.0 start with the method, `eagle3 is only supported for [...]`; 0.10.0 "
    "says `Eagle3 is only supported for Llama models.`), reported by pydantic as a validation "
    "error of SpeculativeConfig.",
    releases="0.10.0-0.21.0; 0.22.0 removed the allow-list. `deepseek_v2`, `deepseek_v3`, "
    "`kimi_k2` and `kimi_k25` are accepted from 0.18.0.",
    example="""\
# config/speculative.py, vLLM 0.16.0; the target's text config has model_type "kimi_k2"
eagle3_target_supported = ["llama", "qwen", "minicpm", "gpt_oss", ...]
""",
    fix="""\
eagle3_target_supported = ["llama", "qwen", "minicpm", "gpt_oss", ..., "kimi_k2"]
""",
)

_EAG502 = Explanation(
    runtime="The allow-list check of EAG501 keys on the target's text `model_type`, which lives "
    "in the checkpoint's config.json, not in the model code. Without `--hf-config` or "
    "`--model-type` eagle3lint cannot tell whether the target passes, so it lists what the "
    "release accepts, and the target is not called ready: `eagle3_ready: null` with an "
    "`unverified` entry in JSON; asked about (`--arch`, `--require`), the remark is a warning "
    "and the run exits 1.",
    error="The `ValueError` of EAG501 if the model_type matches no entry.",
    releases="0.10.0-0.21.0 (the releases with an allow-list).",
    example="eagle3lint check --vllm 0.16.0\n",
    fix="eagle3lint check --vllm 0.16.0 --hf-config path/to/checkpoint/config.json\n",
    language="shell",
)


class TargetGate(Rule):
    slug = "target-gate"
    codes = (
        Code(
            "EAG501",
            "model-type-rejected",
            "The EAGLE-3 model_type allow-list rejects the target's text model_type.",
            Severity.ERROR,
            fixable=True,
            explain=_EAG501,
        ),
        Code(
            "EAG502",
            "model-type-gate",
            "Lists what the allow-list accepts when the target's model_type is not known.",
            Severity.INFO,
            explain=_EAG502,
            run_wide=True,
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
            expect=(Expected("EAG501", line=4, message="model_type 'kimi_k2' matches none of"),),
            source="from torch import nn\n\n\nclass KimiForCausalLM(nn.Module):\n    pass\n",
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
                "--model-type to check a target against it.",
                path,
                cls.line,
                cls.column,
                unverified=Unverified(
                    f"the text model_type vLLM tests against the EAGLE-3 allow-list ({where})",
                    "the model_type is in the checkpoint's config.json, not in the code",
                    DECIDE_WITH_MODEL_TYPE,
                ),
            )
            return
        if gate.accepts(model_type):
            return
        yield self.report(
            "EAG501",
            f"model_type {model_type!r} matches none of {accepted}: vLLM rejects "
            f"{target.arch} for {methods} when the speculative config is built "
            f"('{gate.refused(methods.split('/')[0])}', {where}).",
            path,
            cls.line,
            cls.column,
            hint=f"Add {model_type!r} to {gate.variable or 'the allow-list'}.",
            repair=AddGateEntry(gate.path, model_type=model_type) if gate.refusal is None else None,
            fix_refused=gate.refusal or "",
        )


RULES = [TargetGate]
