"""An editor for the language server's tests: pygls' own `LanguageClient` driving `eagle3lint
server` in a subprocess over stdio, as VS Code, Neovim or Helix would."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

TIMEOUT = 120.0
"""Seconds to wait for diagnostics: a first check of a whole release tree parses it cold."""


class Editor:
    """Open documents, their versions, and every diagnostics notification the server sent."""

    def __init__(self) -> None:
        self.client = LanguageClient("eagle3lint-tests", "1")
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.messages: list[str] = []
        self._news = asyncio.Condition()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def _published(params: types.PublishDiagnosticsParams) -> None:
            async with self._news:
                self.published.setdefault(params.uri, []).append(params)
                self._news.notify_all()

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def _message(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

    async def start(self, root: Path, options: dict[str, object] | None = None) -> None:
        await self.client.start_io(sys.executable, "-m", "eagle3lint", "server")
        resolve = types.ClientCodeActionResolveOptions(properties=["edit"])
        capabilities = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                code_action=types.CodeActionClientCapabilities(resolve_support=resolve),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                    related_information=True, version_support=True
                ),
            ),
            workspace=types.WorkspaceClientCapabilities(
                workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)
            ),
        )
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=capabilities,
                root_uri=root.as_uri(),
                initialization_options=options,
            )
        )
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    def count(self, uri: str) -> int:
        """How many diagnostics notifications `uri` has had."""
        return len(self.published.get(uri, []))

    async def diagnostics(self, uri: str, after: int) -> list[types.Diagnostic]:
        """The first diagnostics published for `uri`, at its current version, after its
        `after`th notification."""

        def arrived() -> bool:
            return any(p.version == self.versions[uri] for p in self.published.get(uri, [])[after:])

        async with self._news:
            await asyncio.wait_for(self._news.wait_for(arrived), TIMEOUT)
        return next(
            p.diagnostics for p in self.published[uri][after:] if p.version == self.versions[uri]
        )

    def open(self, path: Path) -> str:
        uri = path.as_uri()
        self.versions[uri] = 1
        self.texts[uri] = path.read_text(encoding="utf-8")
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=self.texts[uri]
                )
            )
        )
        return uri

    def change(self, uri: str, text: str) -> None:
        """Replace the buffer's text (not saved)."""
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def save(self, uri: str, path: Path) -> None:
        path.write_text(self.texts[uri], encoding="utf-8")
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    async def actions(self, uri: str, found: list[types.Diagnostic]) -> list[types.CodeAction]:
        start = min((d.range.start for d in found), key=lambda p: (p.line, p.character))
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=start, end=start),
                context=types.CodeActionContext(diagnostics=found),
            )
        )
        return [a for a in result or [] if isinstance(a, types.CodeAction)]

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        return await self.client.code_action_resolve_async(action)

    def apply(self, edit: types.WorkspaceEdit) -> dict[Path, str]:
        """The files as the edit leaves them (open buffers updated; written by the caller)."""
        written: dict[Path, str] = {}
        for change in edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit)
            uri = change.text_document.uri
            path = Path(uri.removeprefix("file://"))
            if uri in self.versions:
                assert change.text_document.version == self.versions[uri]
            text = self.texts.get(uri) or path.read_text(encoding="utf-8")
            for text_edit in sorted(
                change.edits,
                key=lambda e: (e.range.start.line, e.range.start.character),
                reverse=True,
            ):
                assert isinstance(text_edit, types.TextEdit)
                text = apply_text_edit(text, text_edit)
            written[path] = text
            if uri in self.versions:
                self.change(uri, text)
        return written


def apply_text_edit(text: str, edit: types.TextEdit) -> str:
    """`text` with `edit` made (ASCII sources: UTF-16 columns are character columns)."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        return sum(len(line) + 1 for line in lines[: position.line]) + position.character

    return text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
