"""The language server: the protocol's messages wired to the check, its hover and actions.

The open Python files are judged together, as `eagle3lint check FILE...` judges them, on
open and save at once and on change once typing pauses (`Settings.debounce`). One check runs
at a time, in a thread of its own (its parser processes die with that thread, which lives as
long as the server: `signals.worker_pool`); edits that arrive meanwhile are judged right
after it, and a result already overtaken by an edit is not published.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from eagle3lint import __version__
from eagle3lint.engine import CheckRun
from eagle3lint.errors import UsageError
from eagle3lint.server.actions import code_actions, decode, fix_edit
from eagle3lint.server.analysis import Settings, fixed_in_memory, judge
from eagle3lint.server.diagnostics import diagnostics
from eagle3lint.server.hover import hover_markdown
from eagle3lint.server.text import path_of, word_at
from eagle3lint.sources.files import UnreadableSource, read_source_bytes

T = TypeVar("T")

log = logging.getLogger(__name__)

Snapshot = dict[Path, tuple[str, int]]
"""The open Python files judged: real path → (URI, version)."""


class Eagle3Server(LanguageServer):
    """The server's state: its settings, the last check and the one check running."""

    def __init__(self) -> None:
        super().__init__("eagle3lint", __version__)
        self.settings = Settings()
        self.last: CheckRun | None = None
        self._checker = ThreadPoolExecutor(1, thread_name_prefix="eagle3lint-check")
        self._timer: asyncio.TimerHandle | None = None
        self._running = False
        self._again = False

    # -- the open files ---------------------------------------------------------------------
    def open_files(self) -> dict[Path, tuple[str, int, str]]:
        """Every open Python file that exists on disk: path → (URI, version, text)."""
        found = {}
        for uri, document in self.workspace.text_documents.items():
            path = path_of(uri)
            python = document.language_id == "python" or uri.endswith((".py", ".pyi"))
            if path is not None and python and path.is_file():
                found[path] = (uri, document.version or 0, document.source)
        return found

    def text_of(self, path: Path) -> tuple[str, int | None]:
        """A file's text as the editor holds it and its version (the disk's, not open)."""
        opened = self.open_files().get(path)
        if opened is not None:
            return opened[2], opened[1]
        try:
            return decode(read_source_bytes(path)), None
        except UnreadableSource:
            return "", None

    def in_checker(self, work: Callable[[], T]) -> asyncio.Future[T]:
        """`work` run in the check thread."""
        return asyncio.get_running_loop().run_in_executor(self._checker, work)

    # -- judging ---------------------------------------------------------------------------
    def schedule(self, delay: float) -> None:
        """Judge the open files after `delay` seconds of quiet (a later call restarts it)."""
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(delay, lambda: loop.create_task(self._judge()))

    async def _judge(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        try:
            while True:
                self._again = False
                opened = self.open_files()
                snapshot = {path: (uri, version) for path, (uri, version, _) in opened.items()}
                buffers = {path: _bytes(path, text) for path, (_, _, text) in opened.items()}
                try:
                    run = await self.in_checker(partial(judge, self.settings, buffers))
                except (UsageError, UnreadableSource) as exc:
                    self.say(types.MessageType.Error, f"eagle3lint: {exc}")
                    return
                except Exception as exc:  # the server goes on: the next edit may judge
                    log.exception("the check failed")
                    detail = next(iter(str(exc).splitlines()), "")
                    self.say(
                        types.MessageType.Error,
                        f"eagle3lint: internal error {type(exc).__name__}: {detail}",
                    )
                    return
                if not self._again:
                    self.last = run
                    self._publish(run, snapshot)
                    return
        finally:
            self._running = False

    def _publish(self, run: CheckRun, snapshot: Snapshot) -> None:
        for path, found in diagnostics(run, snapshot).items():
            uri, version = snapshot[path]
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=found, version=version)
            )

    def say(self, kind: types.MessageType, message: str) -> None:
        """Show `message` to the user (and log it)."""
        log.warning(message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))


def _bytes(path: Path, text: str) -> bytes:
    """The bytes of a buffer: the file's own when the buffer holds what the disk does (its
    encoding, BOM and line ends kept, so lines and columns are the disk's), else UTF-8."""
    try:
        data = read_source_bytes(path)
    except UnreadableSource:
        return text.encode("utf-8")
    return data if decode(data) == text else text.encode("utf-8")


server = Eagle3Server()


@server.feature(types.INITIALIZE)
def _initialize(ls: Eagle3Server, params: types.InitializeParams) -> None:
    root = path_of(params.root_uri) if params.root_uri else None
    if root is None and params.workspace_folders:
        root = path_of(params.workspace_folders[0].uri)
    try:
        ls.settings = Settings.from_options(params.initialization_options, root)
    except UsageError as exc:
        ls.say(types.MessageType.Error, f"eagle3lint: {exc}; using the defaults")


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def _opened(ls: Eagle3Server, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def _changed(ls: Eagle3Server, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(ls.settings.debounce)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def _saved(ls: Eagle3Server, params: types.DidSaveTextDocumentParams) -> None:
    ls.schedule(0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def _closed(ls: Eagle3Server, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    ls.schedule(0)  # the files judged together changed: so may what the others show


@server.feature(types.TEXT_DOCUMENT_HOVER)
def _hover(ls: Eagle3Server, params: types.HoverParams) -> types.Hover | None:
    path = path_of(params.text_document.uri)
    if path is None:
        return None
    text, _ = ls.text_of(path)
    found = hover_markdown(word_at(text, params.position), ls.last.report if ls.last else None)
    if found is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=found))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=True
    ),
)
async def _code_actions(
    ls: Eagle3Server, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    path = path_of(params.text_document.uri)
    if path is None:
        return None
    ours = [d for d in params.context.diagnostics if d.source == "eagle3lint"]
    targets = ls.last.report.targets if ls.last else []
    here = {t.arch for t in targets if Path(os.path.realpath(t.path)) == path}
    found = code_actions(params.text_document.uri, ours, here.__contains__, ls.text_of)
    if not _resolves_edits(ls):
        found = [await _resolve(ls, action) for action in found]
    return found


@server.feature(types.CODE_ACTION_RESOLVE)
async def _resolve(ls: Eagle3Server, action: types.CodeAction) -> types.CodeAction:
    data = action.data if isinstance(action.data, dict) else {}
    arch = data.get("fix")
    if not isinstance(arch, str) or action.edit is not None:
        return action
    buffers = {path: _bytes(path, text) for path, (_, _, text) in ls.open_files().items()}
    result = await ls.in_checker(partial(fixed_in_memory, ls.settings, buffers, arch))
    if not result.contents:
        why = "; ".join(result.refused) or "nothing to change"
        ls.say(types.MessageType.Warning, f"eagle3lint fix: {why}")
    action.edit = fix_edit(result, ls.text_of)
    return action


def _resolves_edits(ls: Eagle3Server) -> bool:
    """Whether the client asks `codeAction/resolve` for an action's edit."""
    document = ls.client_capabilities.text_document
    support = document.code_action.resolve_support if document and document.code_action else None
    return support is not None and "edit" in support.properties


def serve() -> None:
    """Speak the protocol on stdin and stdout until the client says exit.

    The protocol gets streams of its own on those descriptors, and `sys.stdin` becomes
    /dev/null: a parser process forked while the protocol's reader waits on stdin would
    otherwise block for ever closing it (multiprocessing closes `sys.stdin` in the child,
    whose lock that reader holds). `sys.stdout` becomes stderr, so that nothing printed by
    accident corrupts the protocol's stream."""
    logging.basicConfig(level=os.environ.get("EAGLE3LINT_LOG", "WARNING").upper())
    stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (open for the process's life)
    sys.stdout = sys.stderr
    server.start_io(stdin, stdout)
