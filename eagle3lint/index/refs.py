"""What a name in the index resolves to: a class, a module, or something outside the trees."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eagle3lint.index.model import ClassSummary, FileSummary


@dataclass(frozen=True, slots=True)
class ClassRef:
    """A class found in the index, with the file that defines it."""

    file: FileSummary
    cls: ClassSummary

    @property
    def qualname(self) -> str:
        return f"{self.file.module}.{self.cls.name}"

    @property
    def name(self) -> str:
        return self.cls.name


@dataclass(frozen=True, slots=True)
class ExternalRef:
    """A name that resolves outside the analysed trees (`torch.nn.Module`) or not at all."""

    text: str


@dataclass(frozen=True, slots=True)
class ModuleRef:
    module: str


Resolved = ClassRef | ExternalRef | ModuleRef


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file of an analysed tree: absolute path, and path relative to its import root."""

    path: Path
    relpath: str
