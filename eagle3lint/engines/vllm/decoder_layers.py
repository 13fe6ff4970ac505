"""The decoder layers a decoder class builds into `self.layers`, as the index resolves them."""

from __future__ import annotations

from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef
from eagle3lint.shapes.model import LayerConvention


def layer_classes(index: ProjectIndex, decoder: ClassRef) -> list[ClassRef]:
    """The layer classes `decoder` builds into `self.layers`, read from the nearest `__init__`
    in its MRO that assigns them (with the layer classes subclasses pass up through
    `super().__init__`); those that resolve to analysed classes."""
    chosen: dict[str, str] = {}
    for entry in index.mro(decoder):
        if not isinstance(entry, ClassRef):
            continue
        if not entry.cls.layer_classes and not entry.cls.layer_params:
            chosen = {**entry.cls.super_init_classes, **chosen}
            continue
        params = entry.cls.layer_params
        names = [
            *(chosen.get(param, default) for param, default in params.items()),
            *entry.cls.layer_classes,
        ]
        module = entry.file.module
        summary = index.summary(module)
        maps = summary.class_maps if summary is not None else {}
        return [
            layer
            for name in names
            for each in maps.get(name, [name])
            if isinstance(layer := index.resolve_dotted(module, each), ClassRef)
        ]
    return []


def layer_conventions(index: ProjectIndex, decoder: ClassRef) -> list[LayerConvention]:
    """The residual conventions of the layer classes `decoder` builds (`layer_classes`);
    empty when none can be followed to a forward."""
    found = []
    for layer in layer_classes(index, decoder):
        convention = next(
            (
                e.cls.layer_convention
                for e in index.mro(layer)
                if isinstance(e, ClassRef) and e.cls.layer_convention is not None
            ),
            None,
        )
        if convention is not None:
            found.append(convention)
    return found
