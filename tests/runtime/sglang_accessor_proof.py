"""Run by an SGLang venv's python: does a class of a repaired model file give SGLang's draft
worker the target's embedding and head? The repaired file is imported in place of the
installed module; the class is given a real `nn.Embedding` and `nn.Linear` where its
`__init__` (which needs a distributed setup) would put them, and SGLang's own
`resolve_target_embed_and_head` (0.5.23; the plain call before) is asked for them.

Input (stdin, JSON): {"file", "module", "class"}. Output: one JSON object.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

os.environ["CUDA_VISIBLE_DEVICES"] = ""

from oracle import StubFinder


def main() -> int:
    request = json.loads(sys.stdin.read())
    sys.meta_path.insert(0, StubFinder({"sgl_kernel"}))
    import torch
    from torch import nn

    spec = importlib.util.spec_from_file_location(request["module"], request["file"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[request["module"]] = module
    spec.loader.exec_module(module)
    cls = getattr(module, request["class"])
    target = cls.__new__(cls)
    nn.Module.__init__(target)
    target.model = nn.Module()
    target.model.embed_tokens = nn.Embedding(8, 4)
    target.lm_head = nn.Linear(4, 8, bias=False)
    try:
        from sglang.srt.speculative.pp_draft_embedding import resolve_target_embed_and_head
    except ImportError:
        resolve_target_embed_and_head = None
    try:
        if resolve_target_embed_and_head is not None:
            embed, head = resolve_target_embed_and_head(target)
        else:
            embed, head = target.get_embed_and_head()
    except AttributeError as exc:
        print(json.dumps({"ok": False, "error": f"AttributeError: {exc}"}))
        return 0
    same = embed is target.model.embed_tokens.weight and head is target.lm_head.weight
    print(json.dumps({"ok": bool(same), "shapes": [list(embed.shape), list(head.shape)]}))
    torch.set_num_threads(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
