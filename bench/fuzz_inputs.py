"""Fuzz the inputs besides source files: configs, cache entries, wheel entries, file names.

    python bench/fuzz_inputs.py [--rounds 300] [--seed 0] [--surface config ...]

Each surface feeds random, mostly malformed input to the code that reads it and accepts only
the outcomes the threat model (docs/security.md) allows: a value, a named error (ConfigError,
UsageError, DownloadError, a cache miss) and, for a whole check, exit 0, 1 or 2 with no
traceback, no "internal error" and no output line a file name could have forged. Anything
else is printed with the input that caused it; the exit code is 1 if there was any. Not a
test (tests/test_hostile.py runs each surface for a few rounds): run it by hand after
changing a reader.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import string
import sys
import tempfile
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from eagle3lint.cli import app
from eagle3lint.config import ConfigError, load_config
from eagle3lint.hf_config import load_hf_config
from eagle3lint.index.cache import SummaryCache
from eagle3lint.index.model import FileSummary
from eagle3lint.runcache import Manifest, RunCache
from eagle3lint.sources import wheels as download
from eagle3lint.sources.discovery import UsageError

KEYS = ["select", "ignore", "vllm-version", "hf-config", "exclude", "rules", "rule-timeout"]
MODEL = "import torch\n\n\nclass FuzzForCausalLM(torch.nn.Module):\n    pass\n"


def value(rng: random.Random, depth: int = 0) -> object:
    """A random JSON/TOML-able value."""
    kind = rng.randrange(7 if depth < 4 else 5)
    if kind == 0:
        return rng.randint(-(2**70), 2**70)
    if kind == 1:
        return rng.random() * 10 ** rng.randint(-5, 5)
    if kind == 2:
        return rng.choice([True, False])
    if kind in (3, 4):
        return "".join(
            rng.choice(string.printable + "\u202e\x00é") for _ in range(rng.randint(0, 20))
        )
    if kind == 5:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(KEYS): value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def deep(rng: random.Random) -> str:
    """Text nested deeper than any parser's recursion limit."""
    depth = rng.choice([1000, 100_000])
    return "[" * depth + "]" * depth


def toml_value(item: object) -> str:
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, dict):
        return "{" + ", ".join(f'"{k}" = {toml_value(v)}' for k, v in item.items()) + "}"
    if isinstance(item, list):
        return "[" + ", ".join(toml_value(v) for v in item) + "]"
    return json.dumps(item)


def fuzz_config(rng: random.Random, work: Path) -> None:
    table = {rng.choice(KEYS): value(rng) for _ in range(rng.randint(0, 4))}
    body = "\n".join(
        f'"{key}" = {deep(rng) if rng.random() < 0.1 else toml_value(item)}'
        for key, item in table.items()
    )
    text = f"[tool.eagle3lint]\n{body}\n"
    if rng.random() < 0.2:
        text = text[: rng.randrange(len(text) + 1)]  # truncated mid-value
    (work / "pyproject.toml").write_text(text, errors="surrogateescape")
    with contextlib.suppress(ConfigError):
        load_config(work)


def fuzz_hf_config(rng: random.Random, work: Path) -> None:
    choice = rng.random()
    text = json.dumps(value(rng)) if choice < 0.7 else deep(rng) if choice < 0.8 else None
    data = text.encode("utf-8", "surrogateescape") if text else os.urandom(rng.randint(0, 64))
    path = work / "config.json"
    path.write_bytes(data)
    with contextlib.suppress(UsageError):
        load_hf_config(path)


def fuzz_cache_entry(rng: random.Random, work: Path) -> None:
    summaries = SummaryCache(work)
    key = f"{rng.getrandbits(160):040x}"
    summaries.store(key, FileSummary(module="m", path="m.py"))
    runs = RunCache(work)
    runs.store(key, "output\n", 1, Manifest())
    for path in (summaries._path(key), runs.root / f"{key}.json"):
        data = path.read_bytes()
        choice = rng.randrange(4)
        if choice == 0:
            data = os.urandom(rng.randint(0, 200))
        elif choice == 1:
            at = rng.randrange(len(data) + 1)
            data = data[:at] + os.urandom(rng.randint(1, 8)) + data[at:]
        elif choice == 2:
            data = (json.dumps(value(rng)) if rng.random() < 0.7 else deep(rng)).encode()
        else:
            data = data.replace(b'"', b"", rng.randint(1, 3))
        path.write_bytes(data)
    loaded = summaries.load(key)
    assert loaded is None or isinstance(loaded, FileSummary), loaded
    cached = runs.load(key)
    assert cached is None or (isinstance(cached[0], str) and cached[1] in (0, 1)), cached


def random_name(rng: random.Random) -> str:
    alphabet = string.ascii_letters + "./\\\n\r\t\x1b:%,\u202e é"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))


def fuzz_wheel(rng: random.Random, work: Path) -> None:
    archive = work / "vllm-9.9.0-py3-none-any.whl"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for _ in range(rng.randint(0, 6)):
            name = rng.choice(["vllm/", "vllm/../", "/vllm/", "other/", ""]) + random_name(rng)
            if rng.random() < 0.7:
                name += ".py"
            size = rng.choice([0, 10, 2**20, 40 * 2**20])
            out.writestr(name, b"x" * size if rng.random() < 0.5 else os.urandom(min(size, 4096)))
    into = work / "tree"
    with contextlib.suppress(download.DownloadError):
        download._extract_python(archive, into)
    for path in into.rglob("*") if into.exists() else ():
        assert path.resolve().is_relative_to(into.resolve()), path


def fuzz_file_name(rng: random.Random, work: Path) -> None:
    folder = work / "models"
    folder.mkdir()
    (folder / "good.py").write_text(MODEL)
    name = random_name(rng).replace("/", "_")[:200] + ".py"
    try:
        (folder / name).write_bytes(rng.choice([b"class Broken(:\n", MODEL.encode(), b"\0"]))
    except OSError:
        return  # a name the file system refuses is no input
    output_format = rng.choice(["text", "github", "sarif", "json"])
    result = CliRunner().invoke(
        app, ["check", str(folder), "--format", output_format, "--no-cache", "--jobs", "1"]
    )
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output, result.output
    assert "eagle3lint: internal error" not in result.stderr, result.stderr
    for line in result.stdout.splitlines():
        assert output_format == "github" or not line.startswith("::"), line
        assert "\x1b" not in line and "\u202e" not in line, line
    if output_format in ("json", "sarif"):
        json.loads(result.stdout)


SURFACES: dict[str, Callable[[random.Random, Path], None]] = {
    "config": fuzz_config,
    "hf-config": fuzz_hf_config,
    "cache-entry": fuzz_cache_entry,
    "wheel": fuzz_wheel,
    "file-name": fuzz_file_name,
}


def fuzz(surface: str, rounds: int, seed: int) -> list[str]:
    """Run one surface; returns a description of every round that broke the promises."""
    failures = []
    for round_ in range(rounds):
        rng = random.Random(f"{seed}-{surface}-{round_}")
        with tempfile.TemporaryDirectory() as tmp:
            try:
                SURFACES[surface](rng, Path(tmp))
            except Exception:  # anything not named is what the fuzzer looks for
                failures.append(f"{surface} round {round_}: {traceback.format_exc(limit=3)}")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--surface", action="append", choices=sorted(SURFACES))
    args = parser.parse_args(argv)
    broken = 0
    for surface in args.surface or SURFACES:
        failures = fuzz(surface, args.rounds, args.seed)
        print(f"{surface}: {args.rounds} rounds, {len(failures)} failures")
        for failure in failures:
            print("  " + failure.replace("\n", "\n  "))
        broken += len(failures)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
