"""SGLang behind the engine face (the second engine): its tree, releases, registry, contract
and targets."""
