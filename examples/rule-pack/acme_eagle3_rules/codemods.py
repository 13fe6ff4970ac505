"""The codemod of ACME101's repair, registered under `eagle3lint.repairs`."""

from __future__ import annotations

import libcst as cst

from eagle3lint.api import CodemodRefused

from .rules import ATTRIBUTE, AddDraftLayers


def add_draft_layers(module: cst.Module, repair: AddDraftLayers, relative: bool) -> cst.Module:
    """`ACME_DRAFT_LAYERS = ()` as the first statement of the class; unchanged when it is there."""
    classes = [s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == repair.cls]
    if len(classes) != 1:
        raise CodemodRefused(f"{repair.cls} is not defined once at the top of the file")
    cls = classes[0]
    if not isinstance(cls.body, cst.IndentedBlock):
        raise CodemodRefused(f"{repair.cls} has its body on the class line")
    names = {
        target.target.value
        for line in cls.body.body
        if isinstance(line, cst.SimpleStatementLine)
        for statement in line.body
        if isinstance(statement, cst.Assign)
        for target in statement.targets
        if isinstance(target.target, cst.Name)
    }
    if ATTRIBUTE in names:
        return module
    added = cst.parse_statement(f"{ATTRIBUTE} = ()\n")
    body = cls.body.with_changes(body=[added, *cls.body.body])
    return module.deep_replace(cls, cls.with_changes(body=body))


CODEMODS = {AddDraftLayers: add_draft_layers}
