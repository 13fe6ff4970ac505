"""Hostile input, round 3 (issue 25): every file is read through the one reader with a limit,
every scanner is linear in its input, `pair` reads and prints nothing it was not pointed at, and
what Python's JSON and TOML parsers raise on a hostile document is a named error.

Each test writes the input of one case of the campaign and runs it under `no_hang`, so a hang or
a scan gone quadratic again fails instead of stalling the suite. The sizes are the campaign's, or
the largest an input may have; the comments give the time each took before the fix.
"""

from __future__ import annotations

import json
import struct
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_hostile import SPECIAL, checked, no_hang
from test_pair import LLAMA, LLAMA_HEAD, LLAMA_TENSORS, draft_folder, write_safetensors
from test_robustness import archs, error_for
from typer.testing import CliRunner, Result
from vllm_tree import ARCH, write_vllm_tree

from eagle3lint.cli import app
from eagle3lint.drafts import checkpoint
from eagle3lint.engines.vllm.contract import drafter
from eagle3lint.engines.vllm.contract.reader import read_contract
from eagle3lint.index.project import ProjectIndex
from eagle3lint.report.fingerprint import source_line
from eagle3lint.sources.files import MAX_CONFIG_BYTES

RELEASE = "0.18.0"
TOO_LONG = "9" * 5000
"""An integer of more digits than Python converts (4,300 by default)."""
TOO_LONG_MESSAGE = f"holds an integer of more than {sys.get_int_max_str_digits():,} digits"


def run(*args: str, seconds: int = 20) -> Result:
    with no_hang(seconds):
        return CliRunner().invoke(app, list(args))


def refused(result: Result, *parts: str) -> None:
    """A usage error (exit 2) whose message holds every one of `parts`, not a crash."""
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    assert "Traceback" not in result.output
    for part in parts:
        assert part in result.output


def pair(vllm: Path, draft: Path, *extra: str, target: Path = LLAMA) -> Result:
    return run(
        "pair", str(vllm), "--target", str(target), "--draft", str(draft), "--no-cache", *extra
    )


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- 1. every file named by the configuration or an option goes through the one reader ----------
@pytest.mark.parametrize("named_by", ["configuration", "option"])
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_special_file_as_baseline_is_a_usage_error(
    models: Path, tmp_path: Path, kind: str, named_by: str
) -> None:
    """`baseline = "x"` in the checkout's own pyproject, x a FIFO: every check hung; /dev/zero
    filled memory."""
    make, message = SPECIAL[kind]
    baseline = make(tmp_path / "x")
    if named_by == "configuration":
        (tmp_path / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "x"\n')
        result = run("check", str(models))
    else:
        result = run("check", str(models), "--baseline", str(baseline))
    refused(result, f"--baseline: {baseline} {message}")


def test_a_baseline_over_the_limit_is_not_read(models: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    with baseline.open("wb") as sparse:
        sparse.truncate(MAX_CONFIG_BYTES + 1)
    result = run("check", str(models), "--baseline", str(baseline))
    refused(result, f"--baseline: {baseline} baseline is 16.8 MB, over the 16 MiB limit")


def test_the_line_of_a_baselined_finding_is_read_through_the_reader(tmp_path: Path) -> None:
    """A finding's file replaced by a FIFO before its fingerprint is taken: no line, no hang."""
    fifo = SPECIAL["fifo"][0](tmp_path / "model.py")
    with no_hang():
        assert source_line(str(fifo), 1) == ""


# -- 2. the contract reader's search for the config registry ------------------------------------
@pytest.mark.parametrize(
    "config_py",
    [
        # 10,000 lines took 114 s; 40,000, over 300 s.
        pytest.param("_CONFIG_REGISTRY = {\n" * 40_000, id="unclosed-openings"),
        # Its entries' `^\s*`: 20,000 blank lines took 34 s.
        pytest.param(
            '_CONFIG_REGISTRY = {\n    a="A",\n' + "\n" * 1_900_000 + "}\n", id="blank-lines"
        ),
        # Over 60 s.
        pytest.param("_CONFIG_REGISTRY = " + " " * 1_900_000 + "x\n", id="blanks"),
    ],
)
def test_the_config_registry_is_searched_in_linear_time(tmp_path: Path, config_py: str) -> None:
    vllm = write_vllm_tree(tmp_path)
    (vllm / "transformers_utils").mkdir()
    (vllm / "transformers_utils" / "config.py").write_text(config_py)
    exit_code, report = checked(str(vllm))
    assert exit_code == 1
    assert report["errors"] == []
    assert archs(report) == [ARCH]


def test_the_config_registry_is_the_first_opening_to_its_first_closing(tmp_path: Path) -> None:
    vllm = write_vllm_tree(tmp_path)
    (vllm / "transformers_utils").mkdir()
    (vllm / "transformers_utils" / "config.py").write_text(
        "\n" * 1000
        + "_CONFIG_REGISTRY: dict[str, type] = LazyConfigDict(\n"
        + '    chatglm="ChatGLMConfig",\n\n\n    "kimi_vl": KimiVLConfig,\n'
        + ")\n"
        + "_CONFIG_REGISTRY = {\n"
        + '    "later": LaterConfig,\n'
        + "}\n"
    )
    contract = read_contract(ProjectIndex([vllm.parent]), vllm, "tree")
    assert contract.model_configs == {"ChatGLMConfig", "KimiVLConfig"}


# -- 3. the scanners of model files ---------------------------------------------------------------
@pytest.mark.parametrize("piece", ['"\\', "'\\"])
def test_a_line_of_unclosed_strings_is_scanned_in_linear_time(models: Path, piece: str) -> None:
    """A 96 KB line of `"\\` took 130 s in the nesting scan (2 MiB: about 16 h)."""
    bad = models / "strings.py"
    bad.write_text(piece * (1_900_000 // len(piece)) + "\n")
    exit_code, report = checked(str(models))
    assert exit_code == 2
    assert error_for(report, bad)["code"] == "EAG901"
    assert archs(report) == [ARCH]


def test_a_string_continued_over_lines_is_one_token(models: Path) -> None:
    """A backslash-newline inside a string continues it: brackets after it are in the string."""
    (models / "good.py").write_text(
        (models / "good.py").read_text() + 'NOTE = "a\\\n' + "(" * 500 + '"\n'
    )
    exit_code, report = checked(str(models))
    assert report["errors"] == []
    assert archs(report) == [ARCH]
    assert exit_code == 1


def test_a_string_of_unclosed_layer_subscripts_in_a_loop_is_scanned_in_linear_time(
    models: Path,
) -> None:
    """The layer loop's `self.layers[...](...)` search: 20,000 in a string took 4 s."""
    good = models / "good.py"
    call = "            hidden_states, residual = layer(positions, hidden_states, residual)\n"
    junk = ("self.layers[" + "-" * 35) * 40_000
    good.write_text(good.read_text().replace(call, f'{call}            note = "{junk}"\n'))
    exit_code, report = checked(str(models))
    assert report["errors"] == []
    assert archs(report) == [ARCH]
    assert exit_code == 1


def test_many_dict_literals_are_located_in_linear_time(models: Path) -> None:
    """Each dict shaped like a registry's searched the file for its header, twice when it
    missed: 8,000 of them and a 1.5 MB comment took over 300 s."""
    dicts = models / "dicts.py"
    dicts.write_text('A = {"a": ("b", "C")}\n' * 8000 + "# " + "x" * 1_500_000 + "\n")
    exit_code, report = checked(str(models))
    assert report["errors"] == []
    assert archs(report) == [ARCH]
    assert exit_code == 1


# -- 4. what `pair` reads -------------------------------------------------------------------------
def test_a_long_identifier_in_the_drafter_module_is_scanned_in_linear_time(
    release_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """A 40 KB identifier took 13 s (the drafter facts' `(\\w+_config)` search); this is 400 KB."""
    vllm = release_copy(RELEASE)
    module = vllm / "model_executor" / "models" / "llama_eagle3.py"
    module.write_text(module.read_text() + "\n" + "a" * 400_000 + " = 1\n")
    result = pair(vllm, draft_folder(tmp_path, LLAMA_HEAD, LLAMA_TENSORS))
    assert result.exit_code == 0, result.output
    assert "aux states  expected 3 (fixed in llama_eagle3.py), provided 3" in result.output


N = 1_900_000
RUNNER = drafter.ID_RUNNERS[0][1]
MODULE = f"{drafter.MODELS_DIR}/llama_eagle3.py"
FC = "def f():\n    self.fc = 1\n"
READS = 'def f():\n    x = "eagle_aux_hidden_state_layer_ids"\n'
REGISTERED = '@register("eagle3")\ndef f():\n    '


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        pytest.param(MODULE, FC + "    " + "a" * N + "\n", id="module-identifier"),
        pytest.param(MODULE, FC + 'getattr(config, "' + "norm" * (N // 4), id="norm-word"),
        pytest.param(drafter.SPECULATORS_ALGOS, '@register("eagle3")' + "\n" * N, id="newlines"),
        pytest.param(
            drafter.SPECULATORS_ALGOS,
            REGISTERED + "pre_trained_config['a'] = config_dict.get('b', x " * (N // 50),
            id="open-defaults",
        ),
        pytest.param(
            drafter.SPECULATORS_ALGOS,
            REGISTERED + 'pre_trained_config["a"] = config_dict.get("b"' + " " * N,
            id="blanks-in-a-get",
        ),
        pytest.param(RUNNER, READS + "    for v in (\n" * (N // 15), id="open-loops"),
        pytest.param(
            drafter.SPECULATIVE,
            "def f():\n    x = draft_model_config.model.lower()\n    y = " + "(" * N,
            id="method-choice-nesting",
        ),
        pytest.param(
            drafter.SPECULATOR_CONFIG,
            "x.matches(\nif method is None:\n" + "    # c\n" * (N // 8) + "q",
            id="detection-order-comments",
        ),
        pytest.param(RUNNER, READS + "    " + "a" * N + "\n", id="runner-identifier"),
        pytest.param(
            drafter.SPECULATORS_ALGOS,
            REGISTERED + 'pre_trained_config["architectures"] = [m[x]]\n    ' + "m = {" * (N // 5),
            id="open-dicts",
        ),
    ],
)
def test_the_drafter_facts_are_read_in_linear_time(tmp_path: Path, rel: str, text: str) -> None:
    """Each of these took over 60 s before."""
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_text(text)
    with no_hang():
        drafter.read_drafter_contract(tmp_path, ["llama_eagle3"], ["llama_eagle3"], None)


@pytest.mark.parametrize("holder", ["", "eagle_config"])
def test_a_draft_config_with_a_million_layer_ids_is_refused(
    vllm_release: Callable[[str], Path], tmp_path: Path, holder: str
) -> None:
    """10^6 layer ids took over 120 s (the summary table and findings show them whole)."""
    ids = {"eagle_aux_hidden_state_layer_ids": list(range(10**6))}
    config = {**LLAMA_HEAD, **({holder: ids} if holder else ids)}
    draft = draft_folder(tmp_path, config, LLAMA_TENSORS)
    key = f"{holder}.eagle_aux_hidden_state_layer_ids" if holder else next(iter(ids))
    refused(
        pair(vllm_release(RELEASE), draft),
        f"--draft: {draft / 'config.json'}: {key} holds 1,000,000 layer ids (at most 1,024",
    )


def test_a_safetensors_header_of_99_mb_is_not_read(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """A 99 MB header took 69 s and 1.34 GB; the format allows 100 MB."""
    draft = draft_folder(tmp_path, LLAMA_HEAD)
    weights = draft / "model.safetensors"
    with weights.open("wb") as sparse:
        sparse.write(struct.pack("<Q", 99_000_000) + b"{")
        sparse.truncate(8 + 99_000_000)
    refused(
        pair(vllm_release(RELEASE), draft),
        f"{weights} is not a safetensors file, or one whose header is over the 16 MiB read",
    )


def test_the_headers_of_one_checkpoint_are_read_up_to_a_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder linking the same large-header file many times: the headers read are bounded."""
    write_safetensors(tmp_path / "large.safetensors", LLAMA_TENSORS)
    size = struct.unpack("<Q", (tmp_path / "large.safetensors").read_bytes()[:8])[0]
    links = []
    for number in range(5):
        links.append(tmp_path / f"link-{number}.safetensors")
        links[-1].symlink_to("large.safetensors")
    monkeypatch.setattr(checkpoint, "MAX_CHECKPOINT_HEADER_BYTES", 3 * size)
    assert len(checkpoint.read_checkpoint(links[:3]).tensors) == len(LLAMA_TENSORS)
    with pytest.raises(checkpoint.UsageError, match="the headers of these 5 files hold more"):
        checkpoint.read_checkpoint(links)


# -- 5. `pair` reads only the checkpoint's own files and prints no byte of them ----------------
def first_bytes(path: str) -> list[str]:
    """How the first 8 bytes of `path` could be printed: as text or as a length field."""
    head = Path(path).read_bytes()[:8]
    return [head.decode("latin-1"), str(struct.unpack("<Q", head)[0]), repr(head)[2:-1]]


def index_naming(draft: Path, shard: str) -> None:
    weight_map = {"fc.weight": shard, "d2t": "model.safetensors"}
    (draft / checkpoint.INDEX_FILE).write_text(json.dumps({"weight_map": weight_map}))


@pytest.mark.parametrize(
    "shard", ["/etc/passwd", "/proc/self/environ", "../../x", "sub/../../x", "..", "", "a\\..\\x"]
)
def test_an_index_cannot_name_a_shard_outside_its_folder(
    vllm_release: Callable[[str], Path], tmp_path: Path, shard: str
) -> None:
    """The index named `/etc/passwd` and the error printed its first 8 bytes."""
    draft = draft_folder(tmp_path, LLAMA_HEAD, LLAMA_TENSORS)
    index_naming(draft, shard)
    result = pair(vllm_release(RELEASE), draft)
    refused(result, f"--draft: {draft / checkpoint.INDEX_FILE} names a shard outside its folder")
    for printed in first_bytes("/etc/passwd"):
        assert printed not in result.output


@pytest.mark.parametrize("secret", ["/etc/passwd", "/proc/self/environ"])
def test_a_shard_linked_to_another_file_prints_nothing_of_it(
    vllm_release: Callable[[str], Path], tmp_path: Path, secret: str
) -> None:
    draft = draft_folder(tmp_path, LLAMA_HEAD)
    (draft / "model.safetensors").symlink_to(secret)
    result = pair(vllm_release(RELEASE), draft)
    refused(result, f"{draft / 'model.safetensors'} is not a safetensors file")
    for printed in first_bytes(secret):
        assert printed not in result.output


def test_a_header_that_is_not_utf8_prints_no_byte_of_it(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    draft = draft_folder(tmp_path, LLAMA_HEAD)
    header = b'{"\xe9t\xe9": 1}'
    (draft / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    result = pair(vllm_release(RELEASE), draft)
    refused(result, "is not a safetensors file: its header is not JSON: not UTF-8 text")
    assert "0xe9" not in result.output and "\\xe9" not in result.output


def test_shards_linked_into_a_hugging_face_cache_are_read(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """A snapshot's files are links to `../../blobs/`: followed, as every loader does."""
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    write_safetensors(blobs / "4a5b", LLAMA_TENSORS)
    snapshot = draft_folder(tmp_path / "snapshots" / "abc", LLAMA_HEAD)
    (snapshot / "model-00001-of-00001.safetensors").symlink_to("../../../blobs/4a5b")
    (snapshot / checkpoint.INDEX_FILE).write_text(
        json.dumps({"weight_map": {"fc.weight": "./model-00001-of-00001.safetensors"}})
    )
    result = pair(vllm_release(RELEASE), snapshot, "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["pairing"]["draft"]["weights"] == [
        str(snapshot / "model-00001-of-00001.safetensors")
    ]


# -- 6. what JSON and TOML parsers raise is a named error -----------------------------------------
def write_checkout(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path / name


CHECK_INPUTS: dict[str, Callable[[Path, str], tuple[Path, list[str]]]] = {
    "hf-config": lambda tmp, value: (
        write_checkout(tmp, "config.json", f'{{"architectures": ["{ARCH}"], "x": {value}}}'),
        ["--hf-config", str(tmp / "config.json")],
    ),
    "pyproject.toml": lambda tmp, value: (
        write_checkout(tmp, "pyproject.toml", f"[tool.eagle3lint]\nrule-timeout = {value}\n"),
        [],
    ),
    "eagle3lint.toml": lambda tmp, value: (
        write_checkout(tmp, "eagle3lint.toml", f"rule-timeout = {value}\n"),
        [],
    ),
    "baseline": lambda tmp, value: (
        write_checkout(tmp, "b.json", f'{{"eagle3lint-baseline": 1, "findings": [{value}]}}'),
        ["--baseline", str(tmp / "b.json")],
    ),
}


@pytest.mark.parametrize("surface", sorted(CHECK_INPUTS))
def test_an_integer_of_5000_digits_in_a_check_input_is_a_named_error(
    models: Path, tmp_path: Path, surface: str
) -> None:
    path, options = CHECK_INPUTS[surface](tmp_path, TOO_LONG)
    refused(run("check", str(models), *options), str(path), TOO_LONG_MESSAGE)


@pytest.mark.parametrize("surface", ["baseline", "hf-config"])
def test_a_deeply_nested_check_input_is_a_named_error(
    models: Path, tmp_path: Path, surface: str
) -> None:
    path, options = CHECK_INPUTS[surface](tmp_path, nested_json(100_000))
    refused(run("check", str(models), *options), str(path), "nests too deeply to read")


def with_index(draft: Path, value: str) -> Path:
    index = draft / checkpoint.INDEX_FILE
    index.write_text(f'{{"weight_map": {{"fc.weight": "model.safetensors"}}, "x": {value}}}')
    return index


def with_header(draft: Path, value: str) -> Path:
    header = f'{{"fc.weight": {{"dtype": "BF16", "shape": [{value}], "data_offsets": [0, 0]}}}}'
    (draft / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header.encode())
    return draft / "model.safetensors"


def with_draft_config(draft: Path, value: str) -> Path:
    text = json.dumps(LLAMA_HEAD)
    (draft / "config.json").write_text(text[:-1] + f', "x": {value}}}')
    return draft / "config.json"


PAIR_INPUTS: dict[str, Callable[[Path, str], Path]] = {
    "draft config": with_draft_config,
    "index": with_index,
    "safetensors header": with_header,
}


@pytest.mark.parametrize("surface", [*sorted(PAIR_INPUTS), "target config"])
@pytest.mark.parametrize("value", [TOO_LONG, nested_json(100_000)], ids=["digits", "nesting"])
def test_an_integer_of_5000_digits_or_deep_nesting_in_a_pair_input_is_a_named_error(
    vllm_release: Callable[[str], Path], tmp_path: Path, surface: str, value: str
) -> None:
    draft = draft_folder(tmp_path / "draft", LLAMA_HEAD, LLAMA_TENSORS)
    target = LLAMA
    if surface == "target config":
        target = tmp_path / "target.json"
        target.write_text(f'{{"architectures": ["LlamaForCausalLM"], "x": {value}}}')
        path = target
    else:
        path = PAIR_INPUTS[surface](draft, value)
    message = TOO_LONG_MESSAGE if value == TOO_LONG else "nests too deeply to read"
    refused(pair(vllm_release(RELEASE), draft, target=target), str(path), message)
