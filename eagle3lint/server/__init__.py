"""`eagle3lint server`: the language server, in modules by job: `analysis` (the check and
`fix` without the protocol), `diagnostics`, `hover`, `actions`, `text` (places), `protocol`."""
