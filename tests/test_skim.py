"""Summaries of some classes of a file are those classes' summaries in a summary of it all.

A cold check reads only the class bodies its targets need (`index.skim`); a class read later,
by the same run or by a run that needs more, must come out as it would have from the start.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from eagle3lint.index.cache import SummaryCache
from eagle3lint.index.extract import summarize, summarize_bodies
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef
from eagle3lint.index.skim import bodies_of, skim
from eagle3lint.sources.files import source_lines

SOURCE = '''\
import torch
from torch import nn


def helper(x):
    y = config.hidden_size
    return x + y


def make(base):
    class Built(base):
        def forward(self, x):
            return x

    return Built


class Attention(nn.Module):
    """Read by nobody."""

    @staticmethod
    def rotate(x):
        return x * hf_config.rope_theta

    def forward(self, x):
        return x


class Short(nn.Module): pass


class DecoderLayer(
    nn.Module,
):
    def __init__(self, config):
        super().__init__()
        self.attn = Attention()

    def forward(self, positions, hidden_states, residual):
        hidden_states = self.attn(hidden_states)
        return hidden_states, residual


@torch.compile
class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(2)])

    def forward(self, positions, hidden_states):
        aux_hidden_states = []
        residual = None
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states, aux_hidden_states
'''


# A lone CR never reaches the extractor: decoding makes it a line feed.
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_class_read_alone_is_summarised_as_in_the_whole_file(newline: str) -> None:
    source = SOURCE.replace("\n", newline)
    whole = summarize(source, "pkg/model.py")
    part = summarize(source, "pkg/model.py", wanted={"Model"})
    assert part.unread == ["Attention", "DecoderLayer"]  # `Short` has nothing to leave out
    assert part.classes["Model"] == whole.classes["Model"]
    assert part.classes["Short"] == whole.classes["Short"]
    # The headers of unread classes are where they are, their bases what they are.
    for name in part.unread:
        assert (part.classes[name].line, part.classes[name].bases) == (
            whole.classes[name].line,
            whole.classes[name].bases,
        )
    # Module-level facts are the whole file's: config reads inside unread bodies, factories.
    assert part.config_reads == whole.config_reads == ["hidden_size", "rope_theta"]
    assert part.factories == whole.factories and "make" in part.factories
    unread = [body for body in part.bodies if body.name in part.unread]
    later = summarize_bodies(source, "pkg/model.py", unread)
    assert later.classes == {n: whole.classes[n] for n in part.unread}


def test_left_out_bodies_keep_every_line_and_column() -> None:
    lines = source_lines(SOURCE)
    bodies, functions = bodies_of(lines, ast.parse(SOURCE))
    assert [b.name for b in bodies] == ["Attention", "DecoderLayer", "Model"]
    assert [f.name for f in functions] == ["helper"]  # `make` defines a class: kept
    text, unread = skim(lines, bodies, {"Model"}, functions)
    assert unread == ["Attention", "DecoderLayer"]
    assert text.count("\n") == SOURCE.count("\n")
    ast.parse(text)
    kept = SOURCE.splitlines()
    for number, line in enumerate(text.splitlines()):
        assert line in ("", kept[number]) or line.strip() == "pass"


def test_the_index_reads_a_body_before_it_hands_the_class_out(tmp_path: Path) -> None:
    """A class the first wave did not ask for is read when resolved; the summary handed out
    earlier gains it, and the cache entry then holds both for the next run."""
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(SOURCE)
    whole = summarize(SOURCE, "pkg/model.py")
    cache = SummaryCache(tmp_path / "cache")

    index = ProjectIndex([root], cache=cache, jobs=1)
    index.preload(["pkg.model"], wanted={"pkg.model": ["Model"]})
    first = index.summary("pkg.model")
    assert first is not None and set(first.unread) == {"Attention", "DecoderLayer"}
    layer = index.resolve("pkg.model", "DecoderLayer")
    assert isinstance(layer, ClassRef) and layer.file is first
    assert layer.cls == whole.classes["DecoderLayer"]
    assert first.unread == ["Attention"]

    again = ProjectIndex([root], cache=cache, jobs=1)
    again.preload(["pkg.model"], wanted={"pkg.model": ["DecoderLayer", "Attention"]})
    cached = again.summary("pkg.model")
    assert cached is not None and cached.unread == [] and cached.bodies == []
    assert cached.classes == whole.classes
