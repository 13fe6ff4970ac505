"""How vLLM's Transformers modeling backend captures the aux hidden states, read from a tree.

The backend (`model_executor/models/transformers/base.py`, 0.16 on) builds its decoder with
transformers' `AutoModel` and taps no layer loop of its own: `set_aux_hidden_state_layers`
registers transformers' `OutputRecorder`s on the decoder's layers, named from the `ModuleList`
whose length is the config's `num_hidden_layers`, and asks for the input of layer `id - 1`.
What that needs from transformers (a version, the recorder module) and from the decoder class
(a layer list of that length, recordable outputs) is read here from vLLM's own code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from eagle3lint.engines.vllm.contract.model import BackendCapture

BACKEND_BASE = "model_executor/models/transformers/base.py"
BACKEND_MODULE = BACKEND_BASE.removesuffix(".py").replace("/", ".")

_SETTER = re.compile(r"^    def set_aux_hidden_state_layers\(self[^)]*\)[^:]*:\n", re.MULTILINE)
_NEXT_DEF = re.compile(r"^    (?:@|def )", re.MULTILINE)
_RECORDER_IMPORT = re.compile(
    r"from\s+(transformers(?:\.\w+)+)\s+import\s+\(?[^)]*?\bOutputRecorder\b"
)
_VERSION_CHECK = re.compile(r"""check_version\(\s*["']([\d.]+)["']\s*,\s*["']([^"']+)["']""")
_CHECK_MESSAGE = re.compile(
    r"""def check_version\(.*?raise ImportError\(\s*((?:f?(?:"[^"\n]*"|'[^'\n]*')\s*)+)\)""",
    re.DOTALL,
)
_OFFSET = re.compile(r"self\._layer_names\[\s*\w+\s*-\s*(\d+)\s*\]")
_LAYER_COUNT = re.compile(r"len\(\s*\w+\s*\)\s*==\s*self\.\w+\.(\w+)")


def read_backend_capture(
    vllm_dir: Path, read: Callable[[Path], str | None]
) -> BackendCapture | None:
    """The backend's capture path in the tree at `vllm_dir`; None where the backend has no
    `set_aux_hidden_state_layers` (no EAGLE-3 support, or no backend). `read` returns a file's
    text, or None when it is not there."""
    path = vllm_dir / BACKEND_BASE
    text = read(path)
    setter = _SETTER.search(text) if text else None
    if text is None or setter is None:
        return None
    following = _NEXT_DEF.search(text, setter.end())
    body = text[setter.end() : following.start() if following else len(text)]
    recorder = _RECORDER_IMPORT.search(body)
    version = _VERSION_CHECK.search(body)
    offset = _OFFSET.search(body)
    count = _LAYER_COUNT.search(text)
    message = _CHECK_MESSAGE.search(text)
    return BackendCapture(
        path=str(path),
        line=text.count("\n", 0, setter.start()) + 1,
        recorder_module=recorder.group(1) if recorder else None,
        min_transformers=version.group(1) if version else None,
        version_error=_joined(message.group(1)).replace("{feature}", version.group(2))
        if message and version
        else None,
        input_offset=int(offset.group(1)) if offset else 0,
        layer_count=count.group(1) if count else None,
    )


def _joined(literals: str) -> str:
    """The text of adjacent string literals, f-string fields left as written."""
    return "".join(a or b for a, b in re.findall(r"""f?(?:"([^"\n]*)"|'([^'\n]*)')""", literals))
