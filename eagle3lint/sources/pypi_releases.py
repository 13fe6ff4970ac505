"""A wing's releases when its engine publishes them on PyPI as wheels of its `package`
(vLLM, SGLang): the four release methods of the engine face, as one mixin."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar


class PypiReleases:
    """`fetch_release`, `check_version`, `is_fetched` and `list_releases` for the wheels of
    the distribution named `package` (put before `Wing` among a wing's bases)."""

    package: ClassVar[str]

    def fetch_release(
        self, version: str, cache_root: Path | None = None, progress: bool = False
    ) -> Path:
        from eagle3lint.sources.wheels import fetch_release

        return fetch_release(version, cache_root, progress, self.package)

    def check_version(self, version: str) -> None:
        from eagle3lint.sources.wheels import check_version

        check_version(version, self.package)

    def is_fetched(self, version: str, cache_root: Path | None = None) -> bool:
        from eagle3lint.sources.wheels import COMPLETE, release_dir

        return (release_dir(version, cache_root, self.package) / COMPLETE).is_file()

    def list_releases(self, cache_root: Path | None = None) -> list[str]:
        from eagle3lint.sources.release_index import indexed_releases

        return indexed_releases(cache_root, self.package)
