"""A scratch engine, toyserve, that is not vLLM: its own tree layout (`toyserve/models/`), its
own registry (`models/catalog.py`'s `MODELS`), its own contract (the methods of
`spec.SupportsDraftHooks`) and its own rule. It plugs into eagle3lint through the engine face
alone (entry points `eagle3lint.engines` and `eagle3lint.rules`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.api import Code, Rule, RuleContext, Severity
from eagle3lint.engines import Role, Wing
from eagle3lint.errors import DownloadError
from eagle3lint.index.project import ProjectIndex
from eagle3lint.index.refs import ClassRef

SPEC = "toyserve.spec"
PROTOCOL = "SupportsDraftHooks"


@dataclass(frozen=True)
class ToyContract:
    version: str | None
    source: str
    root: str
    hooks: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"draft hooks: {', '.join(self.hooks) or 'none'}"

    def to_json(self) -> dict[str, object]:
        return {"hooks": list(self.hooks)}


@dataclass(frozen=True)
class Entry:
    arch: str
    module: str
    cls: str
    section: str = "MODELS"


@dataclass(eq=False)
class ToyTarget:
    arch: str
    ref: ClassRef
    index: ProjectIndex
    contract: ToyContract
    registered: bool = True
    variant: str | None = None
    role: Role = Role.TARGET
    pp_aux_relay: bool | None = None
    is_module: bool = True
    missing: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        own = {
            name
            for entry in self.index.mro(self.ref)
            if isinstance(entry, ClassRef) and entry.qualname != f"{SPEC}.{PROTOCOL}"
            for name in entry.cls.methods
        }
        self.missing = tuple(h for h in self.contract.hooks if h not in own)

    @property
    def implements_eagle3(self) -> bool:
        return not self.missing

    @property
    def claims_eagle3(self) -> bool:
        return len(self.missing) < len(self.contract.hooks)

    def modules(self) -> set[str]:
        return {e.file.module for e in self.index.mro(self.ref) if isinstance(e, ClassRef)}

    def depends_on(self) -> set[str]:
        return self.modules()


class ToyWing(Wing):
    name = "toy"
    label = "Toyserve"
    package = "toyserve"
    registry_module = "toyserve.models.catalog"
    models_package = "toyserve.models"
    tree_marker = "models"

    def installed_tree(self) -> Path | None:
        return None

    def fetch_release(
        self, version: str, cache_root: Path | None = None, progress: bool = False
    ) -> Path:
        raise DownloadError("toyserve has no releases")

    def check_version(self, version: str) -> None:
        raise DownloadError(f"toyserve has no release {version}")

    def is_fetched(self, version: str, cache_root: Path | None = None) -> bool:
        return False

    def list_releases(self, cache_root: Path | None = None) -> list[str]:
        return []

    def read_contract(self, index: ProjectIndex, tree: Path, source: str) -> ToyContract:
        version = index.summary("toyserve.version")
        protocol = index.class_ref(SPEC, PROTOCOL)
        hooks = tuple(protocol.cls.methods) if protocol is not None else ()
        return ToyContract(version.version if version else None, source, str(tree), hooks)

    def newest_contract(self) -> ToyContract:
        return ToyContract("1.0", "newest known", "", ("capture_hidden", "embed_and_head"))

    def unread_contract(self, source: str, root: str) -> ToyContract:
        return ToyContract(None, source, root)

    def registry(self, index: ProjectIndex) -> list[Entry]:
        summary = index.summary(self.registry_module)
        literal = summary.registry_dicts.get("MODELS") if summary else None
        return [
            Entry(e.key, f"{self.models_package}.{e.module}", e.cls)
            for e in (literal.entries if literal else ())
        ]

    def targets(self, index, contract, entries, unresolved) -> list[ToyTarget]:
        found = []
        for entry in entries:
            ref = index.class_ref(entry.module, entry.cls)
            if ref is None:
                unresolved.append(entry)
            else:
                found.append(ToyTarget(entry.arch, ref, index, contract))
        return found

    def file_targets(self, index, contract, modules, known) -> list[ToyTarget]:
        return []


WING = ToyWing()


class DraftHooks(Rule):
    slug = "toy-draft-hooks"
    engines = ("toy",)
    codes = (
        Code(
            "TOY101",
            "missing-draft-hook",
            "The target lacks a method toyserve's SupportsDraftHooks requires",
            Severity.ERROR,
        ),
    )

    def check(self, target: ToyTarget, ctx: RuleContext):  # type: ignore[override]
        for hook in target.missing:
            yield self.report(
                "TOY101",
                f"{target.ref.name} has no {hook}(), which toyserve calls to attach a drafter",
                ctx.path(target.ref),
                target.ref.cls.line,
            )
