"""Golden tests for `add_forward_taps` (stub style) and `add_mixin_taps` (0.18+ mixin style)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import libcst as cst
import pytest

from eagle3lint.codemod import CodemodRefused, add_forward_taps, add_mixin_taps

# `assert_rewrites(transform, before, after, *, formatted=True)`, see conftest.py.
RewriteCheck = Callable[..., None]

Transform = Callable[[cst.Module], cst.Module]


def stub(*, stream: bool = False) -> Transform:
    return lambda module: add_forward_taps(module, "Qwen2Model", stream=stream)


def mixin(*, stream: bool = False, mixin_import: bool = True) -> Transform:
    return lambda module: add_mixin_taps(
        module, "Qwen2Model", stream=stream, mixin_import=mixin_import
    )


# A decoder in the shape of vLLM's qwen2.py, with `{loop}` standing for its layer loop.
MODEL = """\
from .interfaces import SupportsPP


class Qwen2Model(nn.Module):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = ""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers, Qwen2DecoderLayer, prefix=f"{{prefix}}.layers"
        )
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps){init}

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        intermediate_tensors: IntermediateTensors | None = None,
    ) -> torch.Tensor | IntermediateTensors:
        if get_pp_group().is_first_rank:
            hidden_states = self.embed_tokens(input_ids)
            residual = None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]

{loop}
        if not get_pp_group().is_last_rank:
            return IntermediateTensors(
                {{"hidden_states": hidden_states, "residual": residual}}
            )

        hidden_states, _ = self.norm(hidden_states, residual)
{final}        return hidden_states
"""
STUB_INIT = "\n\n        self.aux_hidden_state_layers = tuple[int, ...]()"
TAPPED_RETURN = """\
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
"""


def model(loop: str, *, init: str = "", final: str = "") -> str:
    return MODEL.format(
        loop=textwrap.indent(textwrap.dedent(loop), " " * 8), init=init, final=final
    )


def stub_tapped(loop: str) -> str:
    return model(loop, init=STUB_INIT, final=TAPPED_RETURN)


def mixin_tapped(loop: str) -> str:
    code = model(loop, final=TAPPED_RETURN)
    return code.replace("SupportsPP", "EagleModelMixin, SupportsPP", 1).replace(
        "class Qwen2Model(nn.Module):", "class Qwen2Model(nn.Module, EagleModelMixin):"
    )


ISLICE_LOOP = """\
for layer in islice(self.layers, self.start_layer, self.end_layer):
    hidden_states, residual = layer(positions, hidden_states, residual)
"""


# --- stub style ---------------------------------------------------------------------------


def test_stub_taps_the_stream_alone_for_layers_that_return_it(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        stub(stream=True),
        model(ISLICE_LOOP),
        stub_tapped(
            """\
            aux_hidden_states = []
            for idx, layer in enumerate(
                islice(self.layers, self.start_layer, self.end_layer),
                start=self.start_layer,
            ):
                if idx in self.aux_hidden_state_layers:
                    aux_hidden_states.append(hidden_states)
                hidden_states, residual = layer(positions, hidden_states, residual)
            """
        ),
    )


def test_stub_taps_with_enumerate_start_like_deepseek_v2_0_18(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        stub(),
        model(ISLICE_LOOP),
        stub_tapped(
            """\
            aux_hidden_states = []
            for idx, layer in enumerate(
                islice(self.layers, self.start_layer, self.end_layer),
                start=self.start_layer,
            ):
                if idx in self.aux_hidden_state_layers:
                    aux_hidden_states.append(
                        hidden_states + residual if residual is not None else hidden_states
                    )
                hidden_states, residual = layer(positions, hidden_states, residual)
            """
        ),
    )


@pytest.mark.parametrize(
    ("loop", "header"),
    [
        pytest.param(
            "for layer in self.layers[self.start_layer : self.end_layer]:",
            """\
            for idx, layer in enumerate(
                self.layers[self.start_layer : self.end_layer], start=self.start_layer
            ):""",
            id="slice",
        ),
        pytest.param(
            "for layer in self.layers:",
            "for idx, layer in enumerate(self.layers):",
            id="all-layers",
        ),
        pytest.param(
            "for layer in islice(self.layers, self.end_layer):",
            "for idx, layer in enumerate(islice(self.layers, self.end_layer)):",
            id="islice-stop-only",
        ),
        pytest.param(
            "for i, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):",
            """\
            for i, layer in enumerate(
                islice(self.layers, self.start_layer, self.end_layer),
                start=self.start_layer,
            ):""",
            id="already-enumerated-gains-start",
        ),
        pytest.param(
            "for _, layer in enumerate(self.layers):",
            "for idx, layer in enumerate(self.layers):",
            id="underscore-index-renamed",
        ),
    ],
)
def test_stub_taps_other_loop_headers(
    assert_rewrites: RewriteCheck, loop: str, header: str
) -> None:
    index = "i" if "for i," in loop else "idx"
    call = "    hidden_states, residual = layer(positions, hidden_states, residual)\n"
    tap = (
        f"    if {index} in self.aux_hidden_state_layers:\n"
        "        aux_hidden_states.append(\n"
        "            hidden_states + residual if residual is not None else hidden_states\n"
        "        )\n"
    )
    assert_rewrites(
        stub(),
        model(f"{loop}\n{call}"),
        stub_tapped(f"aux_hidden_states = []\n{textwrap.dedent(header)}\n{tap}{call}"),
    )


def test_stub_taps_range_loop_keeps_its_absolute_index(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        stub(),
        model(
            """\
            for i in range(self.start_layer, self.end_layer):
                layer = self.layers[i]
                hidden_states, residual = layer(positions, hidden_states, residual)
            """
        ),
        stub_tapped(
            """\
            aux_hidden_states = []
            for i in range(self.start_layer, self.end_layer):
                layer = self.layers[i]
                if i in self.aux_hidden_state_layers:
                    aux_hidden_states.append(
                        hidden_states + residual if residual is not None else hidden_states
                    )
                hidden_states, residual = layer(positions, hidden_states, residual)
            """
        ),
    )


def test_names_come_from_the_layer_call(assert_rewrites: RewriteCheck) -> None:
    before = model(
        """\
        # Run the decoder layers of this pipeline rank.
        for block in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, res = block(positions, hidden_states, res)
        """
    ).replace("residual = None", "res = None")
    after = stub_tapped(
        """\
        # Run the decoder layers of this pipeline rank.
        aux_hidden_states = []
        for idx, block in enumerate(
            islice(self.layers, self.start_layer, self.end_layer),
            start=self.start_layer,
        ):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(
                    hidden_states + res if res is not None else hidden_states
                )
            hidden_states, res = block(positions, hidden_states, res)
        """
    ).replace("residual = None", "res = None")
    assert_rewrites(stub(), before, after)


def test_index_name_avoids_one_already_in_use(assert_rewrites: RewriteCheck) -> None:
    before = model(ISLICE_LOOP).replace(
        "residual = None", "residual = None\n            idx = input_ids"
    )
    after = stub_tapped(
        """\
        aux_hidden_states = []
        for layer_idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer),
            start=self.start_layer,
        ):
            if layer_idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(
                    hidden_states + residual if residual is not None else hidden_states
                )
            hidden_states, residual = layer(positions, hidden_states, residual)
        """
    ).replace("residual = None", "residual = None\n            idx = input_ids")
    assert_rewrites(stub(), before, after)


def test_stub_keeps_an_existing_aux_layers_attribute(assert_rewrites: RewriteCheck) -> None:
    init = "\n        self.aux_hidden_state_layers = ()"
    after = stub_tapped(
        """\
        aux_hidden_states = []
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer),
            start=self.start_layer,
        ):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(
                    hidden_states + residual if residual is not None else hidden_states
                )
            hidden_states, residual = layer(positions, hidden_states, residual)
        """
    ).replace(STUB_INIT, init)
    assert_rewrites(stub(), model(ISLICE_LOOP, init=init), after)


def test_forward_that_already_taps_is_unchanged(assert_rewrites: RewriteCheck) -> None:
    # vLLM 0.16's llama.py, with upstream's residual-unsafe tap: left alone all the same.
    tapped = stub_tapped(
        """\
        aux_hidden_states = []
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer)
        ):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        """
    )
    assert_rewrites(stub(), tapped, tapped)
    assert_rewrites(mixin(), tapped, tapped)


# --- mixin style ----------------------------------------------------------------------------


def test_mixin_taps_like_llama_0_18(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        mixin(),
        model(ISLICE_LOOP),
        mixin_tapped(
            """\
            aux_hidden_states = self._maybe_add_hidden_state(
                [], self.start_layer, hidden_states, residual
            )
            for idx, layer in enumerate(
                islice(self.layers, self.start_layer, self.end_layer),
                start=self.start_layer,
            ):
                hidden_states, residual = layer(positions, hidden_states, residual)
                self._maybe_add_hidden_state(
                    aux_hidden_states, idx + 1, hidden_states, residual
                )
            """
        ),
    )


def test_mixin_taps_with_enumerate_start_record_the_first_layer_by_its_index(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        mixin(),
        model(ISLICE_LOOP),
        mixin_tapped(
            """\
            aux_hidden_states = self._maybe_add_hidden_state(
                [], self.start_layer, hidden_states, residual
            )
            for idx, layer in enumerate(
                islice(self.layers, self.start_layer, self.end_layer),
                start=self.start_layer,
            ):
                hidden_states, residual = layer(positions, hidden_states, residual)
                self._maybe_add_hidden_state(
                    aux_hidden_states, idx + 1, hidden_states, residual
                )
            """
        ),
    )


def test_mixin_taps_range_loop(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        mixin(),
        model(
            """\
            for i in range(self.start_layer, self.end_layer):
                layer = self.layers[i]
                hidden_states, residual = layer(positions, hidden_states, residual)
            """
        ),
        mixin_tapped(
            """\
            aux_hidden_states = self._maybe_add_hidden_state(
                [], self.start_layer, hidden_states, residual
            )
            for i in range(self.start_layer, self.end_layer):
                layer = self.layers[i]
                hidden_states, residual = layer(positions, hidden_states, residual)
                self._maybe_add_hidden_state(
                    aux_hidden_states, i + 1, hidden_states, residual
                )
            """
        ),
    )


def test_mixin_without_import(assert_rewrites: RewriteCheck) -> None:
    after = mixin_tapped(
        """\
        aux_hidden_states = self._maybe_add_hidden_state(
            [], self.start_layer, hidden_states, residual
        )
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer),
            start=self.start_layer,
        ):
            hidden_states, residual = layer(positions, hidden_states, residual)
            self._maybe_add_hidden_state(
                aux_hidden_states, idx + 1, hidden_states, residual
            )
        """
    ).replace("EagleModelMixin, SupportsPP", "SupportsPP")
    assert_rewrites(mixin(mixin_import=False), model(ISLICE_LOOP), after)


def test_layers_given_no_residual_are_tapped_on_the_stream(
    assert_rewrites: RewriteCheck,
) -> None:
    # StableLM's loop: the layer receives the whole stream and binds a residual of its own,
    # which does not exist before the first call (a tap reading it would be unbound).
    loop = """\
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(positions, hidden_states)
        """
    assert_rewrites(
        mixin(stream=True),
        model(loop),
        mixin_tapped(
            """\
            aux_hidden_states = self._maybe_add_hidden_state(
                [], self.start_layer, hidden_states, None
            )
            for idx, layer in enumerate(
                islice(self.layers, self.start_layer, self.end_layer),
                start=self.start_layer,
            ):
                hidden_states, residual = layer(positions, hidden_states)
                self._maybe_add_hidden_state(
                    aux_hidden_states, idx + 1, hidden_states, None
                )
            """
        ),
    )


def test_pre_layer_statements_stay_before_the_tap(assert_rewrites: RewriteCheck) -> None:
    # Solar's loop blends the residual before the layer: the tap must see the blended stream.
    loop = """\
        for i in range(self.start_layer, self.end_layer):
            layer = self.layers[i]
            if i in self.bskcn_layers:
                residual = self.blend(residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        """
    assert_rewrites(
        stub(),
        model(loop),
        stub_tapped(
            """\
            aux_hidden_states = []
            for i in range(self.start_layer, self.end_layer):
                layer = self.layers[i]
                if i in self.bskcn_layers:
                    residual = self.blend(residual)
                if i in self.aux_hidden_state_layers:
                    aux_hidden_states.append(
                        hidden_states + residual if residual is not None else hidden_states
                    )
                hidden_states, residual = layer(positions, hidden_states, residual)
            """
        ),
    )
    with pytest.raises(CodemodRefused, match="rebinds the hidden state before the layer call"):
        add_mixin_taps(cst.parse_module(model(loop)), "Qwen2Model")


def test_range_loop_calling_the_layer_by_index(assert_rewrites: RewriteCheck) -> None:
    loop = """\
        for i in range(self.start_layer, self.end_layer):
            hidden_states, residual = self.layers[i](positions, hidden_states, residual)
        """
    assert_rewrites(
        stub(),
        model(loop),
        stub_tapped(
            """\
            aux_hidden_states = []
            for i in range(self.start_layer, self.end_layer):
                if i in self.aux_hidden_state_layers:
                    aux_hidden_states.append(
                        hidden_states + residual if residual is not None else hidden_states
                    )
                hidden_states, residual = self.layers[i](positions, hidden_states, residual)
            """
        ),
    )


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loop", "reason"),
    [
        pytest.param(
            "hidden_states = self.blocks(hidden_states)\n",
            "no loop over self.layers",
            id="no-loop",
        ),
        pytest.param(
            ISLICE_LOOP + ISLICE_LOOP,
            "2 loops over self.layers",
            id="two-loops",
        ),
        pytest.param(
            "if self.layers:\n" + textwrap.indent(ISLICE_LOOP, "    "),
            "nested in another block",
            id="nested",
        ),
        pytest.param(
            "for layer in list(self.layers):\n"
            "    hidden_states, residual = layer(positions, hidden_states, residual)\n",
            "unsupported loop over self.layers",
            id="other-iterable",
        ),
        pytest.param(
            "for layer in islice(self.layers, 0, self.end_layer, 2):\n"
            "    hidden_states, residual = layer(positions, hidden_states, residual)\n",
            "unsupported loop over self.layers",
            id="islice-step",
        ),
        pytest.param(
            "for layer in self.layers[::2]:\n"
            "    hidden_states, residual = layer(positions, hidden_states, residual)\n",
            "unsupported loop over self.layers",
            id="slice-step",
        ),
        pytest.param(
            "for layer in self.layers:\n    hidden_states = self.norm(layer(hidden_states))\n",
            "no single `hidden_states, residual = layer",
            id="no-layer-call",
        ),
    ],
)
def test_refusals_about_the_loop(loop: str, reason: str) -> None:
    module = cst.parse_module(model(loop))
    with pytest.raises(CodemodRefused, match=reason):
        add_forward_taps(module, "Qwen2Model")
    with pytest.raises(CodemodRefused, match=reason):
        add_mixin_taps(module, "Qwen2Model")


def test_refuses_forward_without_a_final_return_of_a_name() -> None:
    code = model(ISLICE_LOOP).replace(
        "        return hidden_states\n", "        return self.lm_head(hidden_states)\n"
    )
    with pytest.raises(CodemodRefused, match="does not end with `return <name>`"):
        add_forward_taps(cst.parse_module(code), "Qwen2Model")


def test_refuses_missing_class_forward_or_init() -> None:
    with pytest.raises(CodemodRefused, match="no module-level class 'Qwen3Model'"):
        add_forward_taps(cst.parse_module(model(ISLICE_LOOP)), "Qwen3Model")
    no_forward = "class Qwen2Model(nn.Module):\n    def __init__(self):\n        pass\n"
    with pytest.raises(CodemodRefused, match="defines no forward method"):
        add_mixin_taps(cst.parse_module(no_forward), "Qwen2Model")
    no_init = model(ISLICE_LOOP).replace("def __init__", "def setup")
    with pytest.raises(CodemodRefused, match="has no __init__"):
        add_forward_taps(cst.parse_module(no_init), "Qwen2Model")
    # The mixin holds the attribute, so the mixin style does not need __init__.
    add_mixin_taps(cst.parse_module(no_init), "Qwen2Model")


def test_refuses_when_every_index_name_is_taken() -> None:
    code = model(ISLICE_LOOP).replace(
        "residual = None", "residual = None\n            idx = layer_idx = input_ids"
    )
    with pytest.raises(CodemodRefused, match="cannot name the layer index"):
        add_forward_taps(cst.parse_module(code), "Qwen2Model")
