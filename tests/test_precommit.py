"""The pre-commit hooks, run by the real `pre-commit try-repo` on a plugin model repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent

BROKEN = '''\
"""A plugin model: Llama's decoder under a ForCausalLM that only declares EAGLE-1/2."""

from torch import nn

from vllm.config import VllmConfig
from vllm.model_executor.models.interfaces import SupportsEagle, SupportsPP
from vllm.model_executor.models.llama import LlamaModel
from vllm.model_executor.models.utils import maybe_prefix


class MyModelForCausalLM(nn.Module, SupportsPP, SupportsEagle):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix=maybe_prefix(prefix, "model"))

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
    assert "EAG101" in failed.stdout and "my_model.py:11" in failed.stdout

    model.write_text(FIXED)
    git(plugin, "add", "-A")
    passed = try_repo()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
