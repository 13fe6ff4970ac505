"""The pre-commit hooks, run by the real `pre-commit try-repo` on a plugin model repository."""

from __future__ import annotations

import datetime
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from eagle3lint import __version__

REPO = Path(__file__).resolve().parent.parent

BROKEN = '''\
"""A plugin model: Llama's decoder under a ForCausalLM that writes the aux-layer methods (its
claim of EAGLE-3 support) but declares only EAGLE-1/2."""

from torch import nn

from vllm.config import VllmConfig
from vllm.model_executor.models.interfaces import SupportsEagle, SupportsPP
from vllm.model_executor.models.llama import LlamaModel
from vllm.model_executor.models.utils import maybe_prefix


class MyModelForCausalLM(nn.Module, SupportsPP, SupportsEagle):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix=maybe_prefix(prefix, "model"))

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)
'''

FIXED = '''\
"""A plugin model: Llama's decoder under a ForCausalLM that supports EAGLE-3."""

from torch import nn

from vllm.config import VllmConfig
from vllm.model_executor.models.interfaces import SupportsEagle, SupportsEagle3, SupportsPP
from vllm.model_executor.models.llama import LlamaModel
from vllm.model_executor.models.utils import maybe_prefix


class MyModelForCausalLM(nn.Module, SupportsPP, SupportsEagle, SupportsEagle3):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix=maybe_prefix(prefix, "model"))

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)
'''

GIT_IDENTITY = ["-c", "user.name=eagle3lint tests", "-c", "user.email=tests@eagle3lint.invalid"]


def git(cwd: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", *GIT_IDENTITY, "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def snapshot_of_this_repo(into: Path) -> Path:
    """A one-commit git repository holding the working tree as it is now.

    try-repo installs a repository at a commit. This repository's HEAD may lack uncommitted
    work (and in CI's fresh clone it equals the working tree), so the test commits what is on
    disk: the tracked files plus untracked ones that .gitignore does not exclude.
    """
    listed = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    git(into, "init", "-q")
    git(into, "add", "-A")
    git(into, "commit", "-q", "-m", "snapshot")
    return into


def test_hooks_file_declares_check_and_fix() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"eagle3lint", "eagle3lint-fix"}
    assert hooks["eagle3lint"]["entry"] == "eagle3lint check"
    assert hooks["eagle3lint-fix"]["entry"] == "eagle3lint fix"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types"] == ["python"]
        assert hook["require_serial"] is True


def test_try_repo_fails_on_a_model_without_supports_eagle3_and_passes_once_fixed(
    tmp_path: Path, vllm_release: Callable[[str], Path], release_cache: Path
) -> None:
    vllm_release("0.16.0")  # in the cache the hook reads, so the hook never downloads
    hooks_repo = snapshot_of_this_repo(tmp_path / "eagle3lint")
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "pyproject.toml").write_text('[tool.eagle3lint]\nvllm-version = "0.16.0"\n')
    model = plugin / "my_model.py"
    model.write_text(BROKEN)
    git(plugin, "init", "-q")
    git(plugin, "add", "-A")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "EAGLE3LINT_CACHE_DIR": str(release_cache),
        # try-repo builds a fresh environment on every call; letting it see the packages
        # installed here (eagle3lint's own dependencies) spares two downloads of them.
        "VIRTUALENV_SYSTEM_SITE_PACKAGES": "1",
    }

    command = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks_repo), "eagle3lint"]

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "--files", "my_model.py"],
            cwd=plugin,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    failed = try_repo()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "eagle3lint" in failed.stdout and "Failed" in failed.stdout
    assert "EAG101" in failed.stdout and "my_model.py:12" in failed.stdout

    model.write_text(FIXED)
    git(plugin, "add", "-A")
    passed = try_repo()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


TAP = """            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
"""
KIMI = "KimiK25ForConditionalGeneration"


def test_try_repo_on_a_vllm_repository_follows_intent(
    tmp_path: Path, vllm_release: Callable[[str], Path], release_cache: Path
) -> None:
    """The adoption scenario on a git repository of vLLM 0.16.0 whose team needs Kimi-K2.5:
    a harmless edit passes, breaking a shared tap fails with one grouped finding, and an edit
    to Kimi-K2.5 shows the blockers elsewhere in the chain that decide its verdict."""
    hooks_repo = snapshot_of_this_repo(tmp_path / "eagle3lint")
    repo = tmp_path / "vllm-repo"
    shutil.copytree(vllm_release("0.16.0"), repo / "vllm")
    (repo / "pyproject.toml").write_text(f'[tool.eagle3lint]\nrequire = ["{KIMI}"]\n')
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vLLM 0.16.0")
    models = repo / "vllm" / "model_executor" / "models"
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "EAGLE3LINT_CACHE_DIR": str(release_cache),
        "VIRTUALENV_SYSTEM_SITE_PACKAGES": "1",
    }

    def hook(*files: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks_repo), "eagle3lint"]
        return subprocess.run(
            [*command, "--files", *files],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    gpt2 = models / "gpt2.py"
    gpt2.write_text(gpt2.read_text() + "# a harmless comment\n")
    passed = hook("vllm/model_executor/models/gpt2.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout

    llama = models / "llama.py"
    assert TAP in llama.read_text()
    llama.write_text(llama.read_text().replace(TAP, ""))
    failed = hook("vllm/model_executor/models/llama.py")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    findings = [line for line in failed.stdout.splitlines() if ": EAG" in line]
    assert len(findings) == 1, failed.stdout
    assert "llama.py" in findings[0] and "EAG301" in findings[0]
    # The drafter Eagle3LlamaForCausalLM, a LlamaForCausalLM subclass, is not a target (role
    # "draft"), so the shared tap affects 21 targets (Mistral and Ministral 3 among them: their
    # decoder's forward returns LlamaModel's, `super().forward(...)`).
    assert "affects 21 architectures" in findings[0]
    assert "Eagle3LlamaForCausalLM" not in failed.stdout
    git(repo, "checkout", "--", "vllm/model_executor/models/llama.py")

    kimi = models / "kimi_k25.py"
    kimi.write_text(kimi.read_text() + "# an edit\n")
    blocked = hook("vllm/model_executor/models/kimi_k25.py")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    chain = [
        line
        for line in blocked.stdout.splitlines()
        if line.startswith("vllm/model_executor/models/deepseek_v2.py:")
    ]
    assert {line.split(": ")[1].split()[0] for line in chain} >= {"EAG103", "EAG201", "EAG301"}
    assert all(f"outside the files checked; decides {KIMI}" in line for line in chain)


def test_asking_makes_unclaimed_targets_fail(
    vllm_release: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--arch` and `--hf-config` ask about a target: its blockers are errors again."""
    from typer.testing import CliRunner

    from eagle3lint.cli import app

    tree = vllm_release("0.16.0")
    monkeypatch.chdir(tmp_path)
    gpt2 = CliRunner().invoke(app, ["check", str(tree), "--arch", "GPT2LMHeadModel"])
    assert gpt2.exit_code == 1 and "EAG101" in gpt2.stdout
    config = REPO / "examples" / "kimi-k2.5" / "config.json"
    kimi = CliRunner().invoke(app, ["check", str(tree), "--hf-config", str(config), "-q"])
    assert kimi.exit_code == 1
    errors = [line for line in kimi.stdout.splitlines() if ": EAG" in line]
    assert any("kimi_k25.py" in line and "EAG102" in line for line in errors)


def _release_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release", REPO / "tools" / "release.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


release_tool = _release_tool()


def newest_release(root: Path) -> str:
    """The newest version CHANGELOG.md lists as released (an `## Unreleased` section is not)."""
    headings = re.findall(r"^## (\S+)", (root / "CHANGELOG.md").read_text(), flags=re.M)
    return next(h for h in headings if h != "Unreleased")


def assert_pins_exist(root: Path) -> int:
    """Every snippet in the checkout at `root` pins, by its full hash, a commit of that
    repository whose version is the newest release, and names that version where a comment
    fits; the number of pins."""
    version = newest_release(root)
    count = 0
    for snippet in release_tool.SNIPPETS:
        path = root / snippet
        if not path.is_file():
            continue
        for ref, comment in release_tool.pins(path.read_text()):
            assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{snippet} pins {ref!r}, not a commit"
            found = subprocess.run(
                ["git", "show", f"{ref}:eagle3lint/__init__.py"],
                cwd=root,
                capture_output=True,
                text=True,
                check=False,
            )
            assert found.returncode == 0, f"{snippet} pins {ref}, not a commit here"
            assert f'__version__ = "{version}"' in found.stdout, (snippet, ref)
            assert comment in ("", f"# v{version}", f"# frozen: v{version}"), (snippet, comment)
            count += 1
        if snippet.suffix == ".md":
            for block in re.findall(r"```yaml\n(repos:.*?)```", path.read_text(), flags=re.S):
                [repo] = yaml.safe_load(block)["repos"]
                assert {hook["id"] for hook in repo["hooks"]} <= {"eagle3lint", "eagle3lint-fix"}
    return count


def test_every_snippet_pins_a_commit_this_repository_has() -> None:
    # 0.5.1's snippets pinned the tag v0.5.1, which no clone of the repository had:
    # `pre-commit run` failed at `git checkout v0.5.1`.
    assert assert_pins_exist(REPO) >= 7
    assert newest_release(REPO) == __version__


def test_a_snippet_pinning_a_tag_or_a_missing_commit_fails(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    readme = clone / "README.md"
    original = readme.read_text()
    for ref in ("v" + __version__, "0" * 40):
        readme.write_text(release_tool.pinned(original, ref, __version__))
        with pytest.raises(AssertionError, match="pins"):
            assert_pins_exist(clone)


def test_the_release_script_tags_the_release_and_pins_every_snippet_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "release test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "release@eagle3lint.invalid")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    changelog = clone / "CHANGELOG.md"
    if "\n## Unreleased" not in changelog.read_text():
        text = changelog.read_text()
        first = text.index("\n## ")
        changelog.write_text(text[:first] + "\n## Unreleased\n\n- a change\n" + text[first:])
        subprocess.run(["git", "commit", "-qam", "unreleased"], cwd=clone, check=True)
    major, minor = __version__.split(".")[:2]
    version = f"{major}.{int(minor) + 1}.0"
    with pytest.raises(release_tool.ReleaseError, match="not newer"):
        release_tool.release(clone, __version__, datetime.date(2026, 12, 7))
    commit = release_tool.release(clone, version, datetime.date(2026, 12, 7))
    assert git(clone, "rev-parse", f"v{version}^{{commit}}").strip() == commit
    assert f"## {version} (2026-12-07)" in changelog.read_text()
    assert assert_pins_exist(clone) >= 7
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True)
    assert status.stdout == b""


def readme_recipe() -> tuple[str, str, dict[str, Any]]:
    """The README's adoption recipe: the baseline command, the pyproject table, the hook."""
    text = (REPO / "README.md").read_text()
    recipe = text[text.index("## Adopting it") :]
    command = re.search(r"```bash\n(.*?)\n```", recipe, flags=re.DOTALL)
    table = re.search(r"```toml\n(.*?)```", recipe, flags=re.DOTALL)
    hooks = re.search(r"```yaml\n(.*?)```", recipe, flags=re.DOTALL)
    assert command and table and hooks
    return command.group(1), table.group(1), yaml.safe_load(hooks.group(1))


def readme_recipe_repo(
    tmp_path: Path, release: Path, release_cache: Path
) -> tuple[Path, dict[str, str], subprocess.CompletedProcess[str]]:
    """A git copy of `release` set up as the README's adoption recipe says (the baseline
    command, the pyproject table, the hook pinned to a snapshot of this checkout), committed on
    `main`: the repository, the environment its commands run in, and the baseline run."""
    hooks_repo = snapshot_of_this_repo(tmp_path / "eagle3lint")
    repo = tmp_path / "vllm-repo"
    shutil.copytree(release, repo / "vllm")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "EAGLE3LINT_CACHE_DIR": str(release_cache),
        "VIRTUALENV_SYSTEM_SITE_PACKAGES": "1",
    }
    command, table, hooks = readme_recipe()
    program, *arguments = shlex.split(command)
    assert program == "eagle3lint"
    baseline = subprocess.run(
        [sys.executable, "-m", "eagle3lint", *arguments],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert baseline.returncode == 0, baseline.stderr
    (repo / "pyproject.toml").write_text(table)
    [hook_repo] = hooks["repos"]
    hook_repo |= {"repo": str(hooks_repo), "rev": git(hooks_repo, "rev-parse", "HEAD").strip()}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(hooks))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vLLM 0.33.0 with eagle3lint's hook")
    return repo, env, baseline


HARMLESS = "# a harmless comment\n"


def spread(files: list[Path], count: int) -> list[Path]:
    """`count` files evenly spread over `files` (sorted)."""
    step = len(files) / count
    return [files[int(i * step)] for i in range(count)]


def test_the_readme_recipe_guards_a_vllm_0_33_repository(
    tmp_path: Path, vllm_release: Callable[[str], Path], release_cache: Path
) -> None:
    """Issue 31's acceptance: in a git copy of vLLM 0.33.0 set up as the README says, the
    hook passes the untouched tree (--all-files) and harmless edits to 20 model files (the
    ROCm variants and the files that broke it before among them), and blocks a removed tap
    and a removed SupportsEagle3."""
    repo, env, baseline = readme_recipe_repo(tmp_path, vllm_release("0.33.0"), release_cache)
    assert readme_recipe()[1].strip() in baseline.stderr  # the run says what to add, as README

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", *args],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )

    untouched = run("--all-files")
    assert untouched.returncode == 0, untouched.stdout + untouched.stderr
    assert re.search(r"eagle3lint\.+Passed", untouched.stdout), untouched.stdout

    vllm = repo / "vllm"
    models = sorted(
        p.relative_to(repo)
        for folder in ("model_executor/models", "models")
        for p in (vllm / folder).rglob("*.py")
    )
    chosen = {
        Path("vllm/model_executor/models/cosmos3_edge.py"),
        Path("vllm/model_executor/models/granite4_vision.py"),
        Path("vllm/models/qwen4_exp/amd/model.py"),
        Path("vllm/models/kimi_k3/amd/linear.py"),
    }
    chosen |= set(spread([p for p in models if p not in chosen], 20 - len(chosen)))
    assert len(chosen) == 20
    for path in sorted(chosen):
        (repo / path).write_text((repo / path).read_text() + HARMLESS)
        edited = run("--files", str(path))
        assert edited.returncode == 0, f"{path}:\n{edited.stdout}{edited.stderr}"
        assert re.search(r"eagle3lint\.+Passed", edited.stdout), edited.stdout
        git(repo, "checkout", "--", str(path))

    llama = vllm / "model_executor" / "models" / "llama.py"
    tap = (
        "            self._maybe_add_hidden_state(\n"
        "                aux_hidden_states, idx + 1, hidden_states, residual\n"
        "            )\n"
    )
    assert llama.read_text().count(tap) == 1
    llama.write_text(llama.read_text().replace(tap, ""))
    untapped = run("--files", "vllm/model_executor/models/llama.py")
    assert untapped.returncode == 1 and "EAG301" in untapped.stdout, untapped.stdout
    git(repo, "checkout", "--", "vllm/model_executor/models/llama.py")

    qwen3 = vllm / "model_executor" / "models" / "qwen3.py"
    bases = "SupportsLoRA, SupportsPP, SupportsEagle, SupportsEagle3\n):"
    assert qwen3.read_text().count(bases) == 1
    qwen3.write_text(
        qwen3.read_text().replace(bases, "SupportsLoRA, SupportsPP, SupportsEagle\n):")
    )
    unclaimed = run("--files", "vllm/model_executor/models/qwen3.py")
    assert unclaimed.returncode == 1, unclaimed.stdout
    assert "qwen3.py:280:1: EAG101" in unclaimed.stdout
