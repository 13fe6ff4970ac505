"""What a failed download of a release says: offline, a version the index does not have
(naming the releases it does have), a file that is not the published one, or pip's own words."""

from __future__ import annotations

import re

LABELS = {"vllm": "vLLM", "sglang": "SGLang"}
"""How messages name a package's engine."""


def label(package: str) -> str:
    return LABELS.get(package, package)


OFFLINE_MARKERS = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "ConnectTimeoutError",
    "ProxyError",
)
"""What pip prints when it never reached the index (it then also says no version matched)."""
AVAILABLE = re.compile(r"\(from versions: ([^)]*)\)")


def pip_failure(version: str, url: str, pip_output: str, package: str) -> str:
    """`download_failure`, or that the file served is not the published one."""
    if "DO NOT MATCH THE HASHES" in pip_output:
        return (
            f"could not download {package}=={version}: the file served at {url} is not the "
            "wheel the index publishes"
        )
    return download_failure(version, pip_output, package)


def download_failure(version: str, pip_output: str, package: str = "vllm") -> str:
    """Why `pip download <package>==X` failed, in words that say what happened: offline, a version
    the index does not have (naming the newest it has), or pip's own last line."""
    if any(marker in pip_output for marker in OFFLINE_MARKERS):
        return offline(version, package)
    listed = AVAILABLE.search(pip_output)
    if listed is not None or "No matching distribution found" in pip_output:
        return not_on_index(
            version, [v.strip() for v in listed.group(1).split(",")] if listed else [], package
        )
    lines = pip_output.strip().splitlines()
    return f"could not download {package}=={version}: {lines[-1] if lines else 'pip failed'}"


def offline(version: str, package: str = "vllm") -> str:
    return (
        f"could not download {package}=={version}: offline (PyPI could not be reached). Point "
        f"eagle3lint at a {label(package)} checkout instead, or run again when PyPI is reachable."
    )


def not_on_index(version: str, versions: list[str], package: str = "vllm") -> str:
    """A version the index does not have, naming the newest release it does have."""
    releases = [v for v in versions if re.fullmatch(r"\d+(\.\d+)*", v)]

    def order(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("."))

    newest = max(releases, key=order, default=None)
    where = f"; the newest release there is {newest}" if newest else ""
    # `0.16` (or `v0.16.0`) for 0.16.0: name the releases it abbreviates.
    stem = version.removeprefix("v").removeprefix("V")
    meant = sorted((v for v in releases if v == stem or v.startswith(stem + ".")), key=order)
    hint = f": did you mean {', '.join(meant[-3:])}?" if meant else ""
    return f"{label(package)} {version} is not on PyPI (the index answered{where}){hint}"
