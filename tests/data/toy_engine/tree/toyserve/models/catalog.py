MODELS = {
    "ReadyForCausalLM": ("ready", "ReadyForCausalLM"),
    "HalfForCausalLM": ("half", "HalfForCausalLM"),
}
