"""Golden tests for `ensure_interface_import`."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from eagle3lint.codemod import ensure_interface_import

# `assert_rewrites(transform, before, after, *, formatted=True)`, see conftest.py.
RewriteCheck = Callable[..., None]


def importing(name: str, *, relative: bool = True) -> Callable[[cst.Module], cst.Module]:
    return lambda module: ensure_interface_import(module, name, relative=relative)


def test_short_import_that_overflows_goes_one_name_per_line(assert_rewrites: RewriteCheck) -> None:
    # vLLM 0.16 -> 0.18 deepseek_v2.py.
    assert_rewrites(
        importing("SupportsEagle3"),
        """\
        import torch

        from .interfaces import MixtureOfExperts, SupportsEagle, SupportsLoRA, SupportsPP
        from .utils import PPMissingLayer
        """,
        """\
        import torch

        from .interfaces import (
            MixtureOfExperts,
            SupportsEagle,
            SupportsEagle3,
            SupportsLoRA,
            SupportsPP,
        )
        from .utils import PPMissingLayer
        """,
    )


def test_short_import_that_still_fits_stays_on_one_line_sorted(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        importing("SupportsEagle3"),
        "from .interfaces import SupportsLoRA, SupportsPP\n",
        "from .interfaces import SupportsEagle3, SupportsLoRA, SupportsPP\n",
    )


def test_needless_parentheses_are_dropped_like_ruff_does(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        importing("SupportsEagle3"),
        "from .interfaces import (SupportsLoRA, SupportsPP)\n",
        "from .interfaces import SupportsEagle3, SupportsLoRA, SupportsPP\n",
    )


def test_one_per_line_import_gets_a_line_and_keeps_its_comments(
    assert_rewrites: RewriteCheck,
) -> None:
    # vLLM 0.16 kimi_k25.py imports absolutely.
    assert_rewrites(
        importing("SupportsEagle3"),
        """\
        from vllm.model_executor.models.interfaces import (
            SupportsMultiModal,  # images and video chunks
            SupportsPP,
            SupportsQuant,
        )
        """,
        """\
        from vllm.model_executor.models.interfaces import (
            SupportsEagle3,
            SupportsMultiModal,  # images and video chunks
            SupportsPP,
            SupportsQuant,
        )
        """,
    )


def test_new_last_name_leaves_the_comment_of_the_old_one(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        importing("SupportsQuant"),
        """\
        from .interfaces import (
            SupportsEagle,
            SupportsPP,  # pipeline parallel
        )
        """,
        """\
        from .interfaces import (
            SupportsEagle,
            SupportsPP,  # pipeline parallel
            SupportsQuant,
        )
        """,
    )


def test_sorts_by_type_then_naturally_like_isort(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        importing("EagleModelMixin"),
        """\
        from .interfaces import (
            MAX_LAYERS,
            SupportsEagle,
            SupportsEagle3,
            is_pp_model,
        )
        """,
        """\
        from .interfaces import (
            MAX_LAYERS,
            EagleModelMixin,
            SupportsEagle,
            SupportsEagle3,
            is_pp_model,
        )
        """,
    )


def test_missing_import_is_added_among_relative_imports(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        importing("SupportsEagle3"),
        """\
        import torch

        from vllm.config import VllmConfig

        from .adapters import as_embedding_model
        from .utils import maybe_prefix
        """,
        """\
        import torch

        from vllm.config import VllmConfig

        from .adapters import as_embedding_model
        from .interfaces import SupportsEagle3
        from .utils import maybe_prefix
        """,
    )


def test_missing_import_before_every_relative_import_keeps_the_section_gap(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        importing("SupportsEagle3"),
        """\
        import torch

        from .utils import maybe_prefix
        """,
        """\
        import torch

        from .interfaces import SupportsEagle3
        from .utils import maybe_prefix
        """,
    )


def test_missing_import_starts_the_local_section(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        importing("SupportsEagle3"),
        """\
        \"\"\"A model.\"\"\"

        import torch
        """,
        """\
        \"\"\"A model.\"\"\"

        import torch

        from .interfaces import SupportsEagle3
        """,
    )


def test_missing_absolute_import_is_sorted_among_vllm_imports(
    assert_rewrites: RewriteCheck,
) -> None:
    assert_rewrites(
        importing("SupportsEagle3", relative=False),
        """\
        import torch

        from vllm.config import VllmConfig
        from vllm.model_executor.models.llama import LlamaForCausalLM
        """,
        """\
        import torch

        from vllm.config import VllmConfig
        from vllm.model_executor.models.interfaces import SupportsEagle3
        from vllm.model_executor.models.llama import LlamaForCausalLM
        """,
    )


def test_already_imported_in_either_form_is_unchanged(assert_rewrites: RewriteCheck) -> None:
    for code in (
        "from .interfaces import SupportsEagle3\n",
        "from vllm.model_executor.models.interfaces import SupportsEagle3, SupportsPP\n",
        "from .interfaces import *\n",
    ):
        assert_rewrites(importing("SupportsEagle3"), code, code)


def test_a_different_module_named_interfaces_does_not_count(assert_rewrites: RewriteCheck) -> None:
    assert_rewrites(
        importing("SupportsEagle3"),
        "from .interfaces_base import SupportsPP\n",
        "from .interfaces import SupportsEagle3\nfrom .interfaces_base import SupportsPP\n",
    )
