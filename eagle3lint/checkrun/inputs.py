"""The input errors of a run that are not a file's own: PATH arguments that are not there or
cannot be read, a folder where nothing was found, and the same error said once."""

from __future__ import annotations

from pathlib import Path

from eagle3lint.findings import InputError
from eagle3lint.sources.discovery import Workspace


def workspace_errors(workspace: Workspace) -> list[InputError]:
    """The PATH arguments that are missing or unreadable."""
    errors = [missing_path(p) for p in workspace.missing]
    errors += [InputError(str(p), why, code="EAG902") for p, why in workspace.unreadable.items()]
    return errors


def nothing_found(folders: list[Path]) -> InputError:
    """Folders given as PATHs that hold neither a vLLM tree nor a model class."""
    return InputError(
        ", ".join(str(p) for p in folders),
        "no vLLM tree (a folder holding model_executor/models/) and no model classes "
        "(a class named *ForCausalLM, *ForConditionalGeneration or *LMHeadModel, or one "
        "using vLLM's model interfaces) were found here",
        code="EAG902",
    )


def missing_path(path: Path) -> InputError:
    """A PATH argument that is not there, in the system's words (a symlink loop, no access)."""
    reason = "no such file or directory"
    try:
        path.stat()
    except OSError as exc:
        if exc.strerror:
            reason = exc.strerror[0].lower() + exc.strerror[1:]
    return InputError(str(path), reason, code="EAG902")


def unique(errors: list[InputError]) -> list[InputError]:
    """Each error once (by file and message), in the order first given."""
    return list({(e.path, e.message): e for e in errors}.values())
