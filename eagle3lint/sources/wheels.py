"""`--vllm X.Y.Z`, `--sglang X.Y.Z`: an engine release's Python sources from PyPI, without
installing it. Every function takes the engine's distribution name (`package`, `vllm` unless
given); the sources kept are that package's folder of the wheel.

The release's wheels and their digests are read from PyPI first (the simple API, PEP 691 JSON
or PEP 503 HTML with `#sha256=` fragments). pip then fetches that one file, by its URL, in an
isolated interpreter (`python -I`: neither the working directory nor PYTHON* variables can put
code of theirs on its path), from a temporary working directory, with `--require-hashes`; the
file it leaves is hashed again before anything is extracted. No other configured index or
find-links folder is asked for the package, and a file that is not the published one is refused.
Only `<package>/**.py` is kept, within caps on size, ratio, entry count and name length, in the
user's cache folder. Nothing of it is imported or executed.

On a terminal the download shows the bytes done of the size the index publishes (PEP 700; `?`
when it publishes none), the rate and the time left. pip still fetches the file rather than a
download of our own: pip is what reaches the index the way the user set it up (proxy,
certificate authority, retries, from pip's configuration), what the offline and hash-mismatch
messages are read from, and what checks the pinned digest before it keeps the file. It streams
the wheel into `pip-unpack-*/` of its temporary folder (pip 23 to 26) and copies it to `--dest`
once whole, so pip is given a temporary folder inside the staging folder (`TMPDIR`, which `-I`
leaves alone) and a thread reads the size of the largest file there and in `--dest` ten times a
second. The file is only looked at; its bytes are hashed after pip exits, as before. A killed
run's partial download stays in its staging folder, which the next run removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import NamedTuple

from eagle3lint import trust
from eagle3lint.cachedir import default_cache_dir, remove_dead_staging, staging_folder, touch
from eagle3lint.errors import DownloadError, UnusableCache
from eagle3lint.sources.download_errors import label, not_on_index, offline, pip_failure
from eagle3lint.sources.download_line import DownloadLine
from eagle3lint.sources.wheel_metadata import RECORD_KEY, keep_metadata
from eagle3lint.storage import write_atomically

VERSION = re.compile(r"^\d{1,6}(\.\d{1,6}){1,3}([a-z]{1,5}\d{0,6})?(\.post\d{1,6})?$")
COMPLETE = ".complete"
INDEX_ENV = "EAGLE3LINT_INDEX_URL"
DEFAULT_INDEX = "https://pypi.org/simple"
"""The index whose published digests a wheel must match (PyPI; a mirror through INDEX_ENV)."""

MAX_INDEX_PAGE = 64 * 2**20
MAX_ENTRIES = 100_000
"""Entries a wheel may list; vLLM's have about 4,000."""
MAX_ENTRY_BYTES = 64 * 2**20
MAX_TOTAL_BYTES = 1024 * 2**20
"""Python sources extracted from one wheel at most; vLLM 0.33's come to about 40 MB."""
MAX_RATIO = 200
"""Largest size / compressed size of an entry; source code compresses 3 to 10 times."""
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024


def check_version(version: str, package: str = "vllm") -> None:
    """Refuse what is not a release number (also before it becomes a cache folder name)."""
    if not VERSION.match(version):
        raise DownloadError(
            f"{version!r} is not a {label(package)} version number (expected e.g. 0.16.0)"
        )


def release_dir(version: str, cache_root: Path | None = None, package: str = "vllm") -> Path:
    """vLLM's releases keep the folder names of the first versions (`releases/0.16.0`);
    other engines' are named with the package (`releases/sglang-0.5.23`)."""
    name = version if package == "vllm" else f"{package}-{version}"
    return (cache_root or default_cache_dir()) / "releases" / name


def index_url() -> str:
    return os.environ.get(INDEX_ENV) or DEFAULT_INDEX


def fetch_release(
    version: str,
    cache_root: Path | None = None,
    progress: bool = False,
    package: str = "vllm",
    keep: Callable[[str], bool] | None = None,
) -> Path:
    """The `<package>/` folder of release `version`, downloading it on first use; of its
    Python sources only those `keep` accepts (a path in the wheel) when it is given. The
    wheel's METADATA is kept beside it (`wheel_metadata`)."""
    check_version(version, package)
    target = release_dir(version, cache_root, package)
    try:
        if (target / COMPLETE).is_file():
            # Folders no one else can write hold files no one else put there (see trust).
            trust.check_folder(target / package)
            if RECORD_KEY not in _record(target):
                _add_metadata(version, target, progress, package)
            touch(target / COMPLETE)  # least-recently-used pruning (`cachedir`)
            return target / package
        trust.check_folder(target.parent)
        trust.make_folders(target.parent)
        remove_dead_staging(target.parent)  # what killed runs left
        with staging_folder(target.parent, version) as tmp:
            wheel, digest = _download(version, tmp, progress, package)
            staging = tmp / "tree"
            _extract_python(wheel, staging, package, keep)
            record = {"version": version, "wheel": digest, RECORD_KEY: None}
            record[RECORD_KEY] = keep_metadata(wheel, staging)
            (staging / COMPLETE).write_text(json.dumps(record))
            try:
                os.replace(staging, target)
            except OSError:
                # Another run finished the same release first; its copy is as good as ours.
                if not (target / COMPLETE).is_file():
                    shutil.rmtree(target, ignore_errors=True)
                    os.replace(staging, target)
    except UnusableCache as exc:
        raise DownloadError(
            f"cannot keep {package}=={version} in the cache folder {target.parent}: {exc}"
        ) from exc
    except trust.UntrustedCache as exc:
        raise DownloadError(str(exc)) from exc
    except OSError as exc:
        raise DownloadError(
            f"cannot keep {package}=={version} in the cache folder {target.parent}: "
            f"{exc.strerror or exc}. Set EAGLE3LINT_CACHE_DIR to a writable folder."
        ) from exc
    return target / package


def _record(target: Path) -> dict[str, object]:
    """What `.complete` says of the cached release (empty when it is not a JSON object)."""
    try:
        data = json.loads((target / COMPLETE).read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _add_metadata(version: str, target: Path, progress: bool, package: str) -> None:
    """Keep the METADATA of a release cached before it was kept: its wheel is fetched again
    (and checked again) for that one file; its sources stay as they are."""
    record = _record(target)
    with staging_folder(target.parent, version) as tmp:
        try:
            wheel, digest = _download(version, tmp, progress, package)
        except DownloadError as exc:
            raise DownloadError(
                f"{package}=={version} was cached without its wheel's METADATA (what it "
                f"requires of transformers), which is fetched once: {exc}"
            ) from exc
        record |= {"version": version, "wheel": digest, RECORD_KEY: None}
        kept = keep_metadata(wheel, tmp / "tree")
        if kept is not None:
            folder = kept.split("/")[0]
            with contextlib.suppress(OSError):  # another run kept it first
                os.replace(tmp / "tree" / folder, target / folder)
            record[RECORD_KEY] = kept
        write_atomically(target / COMPLETE, json.dumps(record).encode())


class _Links(HTMLParser):
    """`<a href="...#sha256=...">file</a>` of a PEP 503 page."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[dict[str, object]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href") or ""

    def handle_data(self, data: str) -> None:
        if self._href is not None and "#sha256=" in self._href:
            url, digest = self._href.rsplit("#sha256=", 1)
            self.files.append({"filename": data.strip(), "url": url, "hashes": {"sha256": digest}})
        self._href = None


def _release_file(package: str) -> re.Pattern[str]:
    """The release a file of the index is of (`vllm-0.16.0-cp38-abi3-….whl`,
    `vllm-0.16.0.tar.gz`)."""
    return re.compile(rf"{re.escape(package)}-(\d[^-]*?)(?:-|\.tar\.gz$|\.zip$)")


class Wheel(NamedTuple):
    """A published wheel: where it is, its sha256, and its size when the index says (PEP 700)."""

    url: str
    sha256: str
    size: int | None = None


Published = dict[str, Wheel]
"""Wheel file name → (absolute URL, sha256)."""


def published_wheels(version: str, index: str, package: str = "vllm") -> Published:
    """The wheels of release `version` of `package` that `index` lists, with their digests."""
    url = f"{index.rstrip('/')}/{package}/"
    engine = label(package)
    request = urllib.request.Request(
        url, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            page = response.read(MAX_INDEX_PAGE + 1)
            kind = response.headers.get("Content-Type", "")
            base = response.geturl()
    except urllib.error.URLError as exc:
        if not isinstance(exc, urllib.error.HTTPError) and isinstance(exc.reason, OSError):
            raise DownloadError(offline(version, package)) from exc  # no connection was made
        raise DownloadError(
            f"could not read the published digests of {package} at {url} ({exc}). Point "
            f"eagle3lint at a {engine} checkout instead, or run again when the index is reachable."
        ) from exc
    except (OSError, ValueError) as exc:
        raise DownloadError(
            f"could not read the published digests of {package} at {url} ({exc}). Point "
            f"eagle3lint at a {engine} checkout instead, or run again when the index is reachable."
        ) from exc
    if len(page) > MAX_INDEX_PAGE:
        raise DownloadError(f"{url} is larger than any package index page")
    try:
        if "json" in kind:
            files = json.loads(page)["files"]
        else:
            parser = _Links()
            parser.feed(page.decode("utf-8", "replace"))
            files = parser.files
        prefix = f"{package}-{version}-"
        wheels = {
            f["filename"]: Wheel(
                urllib.parse.urljoin(base, f["url"]),
                f["hashes"]["sha256"].lower(),
                f["size"] if isinstance(f.get("size"), int) and f["size"] > 0 else None,
            )
            for f in files
            if isinstance(f, dict) and isinstance(f.get("filename"), str)
            if f["filename"].startswith(prefix) and f["filename"].endswith(".whl")
            if isinstance(f.get("url"), str) and isinstance(f.get("hashes"), dict)
            if re.fullmatch(r"[0-9a-fA-F]{64}", str(f["hashes"].get("sha256", "")))
        }
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise DownloadError(f"{url} is not a package index page ({exc})") from exc
    if not wheels:
        versions = {
            match[1]
            for f in files
            if isinstance(f, dict) and isinstance(f.get("filename"), str)
            if (match := _release_file(package).match(f["filename"]))
        }
        if version not in versions:
            raise DownloadError(not_on_index(version, sorted(versions), package))
        raise DownloadError(
            f"{index} publishes no wheel of {package}=={version} with a sha256 digest"
        )
    return wheels


def _preferred(wheels: Published) -> str:
    """The wheel to fetch: its Python sources are the same on every platform, so any will do;
    one this interpreter could install first (pip refuses to fetch another without its tags),
    this machine's kind first, for a stable choice."""
    from packaging.tags import sys_tags
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    supported = set(sys_tags())

    def installable(name: str) -> bool:
        try:
            return bool(parse_wheel_filename(name)[3] & supported)
        except InvalidWheelFilename:
            return False

    return min(
        wheels,
        key=lambda name: (
            not installable(name),
            "x86_64" not in name,
            "none-any" not in name,
            name,
        ),
    )


def _tag_options(name: str) -> list[str]:
    """pip's options to fetch wheel `name` although this interpreter could not install it
    (SGLang publishes CPython 3.10-3.13 wheels, only some of them per release)."""
    from packaging.tags import sys_tags
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        tags = parse_wheel_filename(name)[3]
    except InvalidWheelFilename:
        return []
    if tags & set(sys_tags()):
        return []
    tag = min(tags, key=str)
    options = ["--platform", tag.platform, "--abi", tag.abi]
    match = re.fullmatch(r"(cp|pp|py)(\d)(\d*)", tag.interpreter)
    if match is not None:
        implementation = "py" if match[1] == "py" else match[1]
        version = f"{match[2]}.{match[3]}" if match[3] else match[2]
        options += ["--implementation", implementation, "--python-version", version]
    return options


def _download(version: str, into: Path, progress: bool, package: str) -> tuple[Path, str]:
    """The wheel of `version` and its sha256, verified against the published digests."""
    index = index_url()
    wheels = published_wheels(version, index, package)
    name = _preferred(wheels)
    url, expected, size = wheels[name]
    work = into / "pip"
    dest = into / "wheel"
    scratch = work / "tmp"
    work.mkdir()
    dest.mkdir()
    scratch.mkdir()
    # The exact file, by URL: no other index or find-links folder is asked for the package.
    (work / "requirements.txt").write_text(f"{package} @ {url} --hash=sha256:{expected}\n")
    command = [
        sys.executable,
        "-I",  # no working directory, user site or PYTHON* variables on pip's path
        "-m",
        "pip",
        "download",
        "--no-deps",
        # pip would build a source distribution to read its metadata, running its setup code.
        "--only-binary=:all:",
        *_tag_options(name),
        "--require-hashes",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(dest),
        "-r",
        str(work / "requirements.txt"),
    ]
    # pip's partial file lands in `scratch`, where the progress line can see it grow.
    env = {**os.environ, "TMPDIR": str(scratch)}
    run = {"capture_output": True, "text": True, "check": False, "cwd": work, "env": env}
    if progress:
        with DownloadLine(f"Downloading {package}=={version}", size, [scratch, dest]):
            result = subprocess.run(command, **run)  # type: ignore[call-overload]
    else:
        result = subprocess.run(command, **run)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise DownloadError(
            pip_failure(version, url, result.stderr or result.stdout or "", package)
        )
    archives = sorted(dest.iterdir())
    if len(archives) != 1:
        raise DownloadError(
            f"pip left {len(archives)} files instead of the {package}=={version} wheel"
        )
    archive = archives[0]
    digest = _sha256(archive)
    if digest != expected:
        raise DownloadError(
            f"{archive.name} (sha256 {digest}) is not the wheel {index} publishes for "
            f"{package}=={version} (sha256 {expected}): refused"
        )
    return archive, digest


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _extract_python(
    archive: Path, into: Path, package: str = "vllm", keep: Callable[[str], bool] | None = None
) -> None:
    """Keep only `<package>/**.py` (those `keep` accepts), refusing unsafe or oversized
    members."""
    if archive.suffix != ".whl":
        raise DownloadError(f"{archive.name} is not a wheel; only wheels are supported")
    try:
        with zipfile.ZipFile(archive) as wheel:
            members = wheel.infolist()
            if len(members) > MAX_ENTRIES:
                raise DownloadError(f"{archive.name} lists {len(members)} entries: refused")
            wanted = [m for m in members if _wanted(m.filename, package)]
            wanted = [m for m in wanted if keep is None or keep(m.filename)]
            names = [m.filename for m in wanted]
            if len(set(names)) != len(names):
                twice = next(n for n in names if names.count(n) > 1)
                raise DownloadError(f"{archive.name} lists {twice} twice: refused")
            if not wanted:
                raise DownloadError(f"{archive.name} holds no {package}/ Python sources")
            total = 0
            for member in wanted:
                total += _extract_member(wheel, member, into, MAX_TOTAL_BYTES - total)
    except zipfile.BadZipFile as exc:
        raise DownloadError(f"{archive.name} is not a valid wheel: {exc}") from exc
    except OSError as exc:
        raise DownloadError(
            f"{archive.name} could not be extracted: {exc.strerror or exc}"
            + (f" ({exc.filename})" if exc.filename else "")
        ) from exc


def _wanted(name: str, package: str = "vllm") -> bool:
    """A `<package>/**.py` member with a safe path (no `..`, not absolute, names of sane
    length)."""
    if not (name.startswith(f"{package}/") and name.endswith(".py")) or "\\" in name:
        return False
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    encoded = name.encode("utf-8", "surrogateescape")
    if len(encoded) > MAX_PATH_BYTES or any(
        len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for part in parts
    ):
        raise DownloadError(f"the wheel holds a file name too long for a file system: {name!r}")
    return True


def _extract_member(wheel: zipfile.ZipFile, member: zipfile.ZipInfo, into: Path, room: int) -> int:
    """Write one member below `into`; returns its size. Sizes are counted as the bytes come
    out, not taken from the header, which the archive itself states."""
    limit = min(MAX_ENTRY_BYTES, room, max(member.compress_size, 1) * MAX_RATIO)
    destination = into.joinpath(*member.filename.split("/"))
    trust.make_folders(destination.parent)
    written = 0
    fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with wheel.open(member) as source, os.fdopen(fd, "wb") as out:
        while chunk := source.read(1 << 20):
            written += len(chunk)
            if written > limit:
                raise DownloadError(
                    f"{member.filename} expands beyond {limit} bytes "
                    f"(from {member.compress_size} compressed): refused"
                )
            out.write(chunk)
    return written
