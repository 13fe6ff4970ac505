"""Issue 32's acceptance: a change is judged by what it breaks. In a git copy of vLLM 0.33.0 set
up as the README's recipe says, an edit of a contract file (`interfaces.py`, which defines no
target) that breaks the targets reading it fails the hook and `check --diff-base`, naming them;
a harmless edit of the same file passes both."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from test_precommit import git, readme_recipe_repo

INTERFACES = "vllm/model_executor/models/interfaces.py"
GETTER = "def get_eagle3_default_aux_hidden_state_layers(self)"
RENAMED = GETTER.replace("default_aux", "standard_aux")
NAMED = re.compile(r"decides (\S+?)(?:,| and | which).*which reads? .*interfaces\.py \(changed\)")
"""A finding outside the file given, naming the target it decides and the changed file it read."""


def test_a_contract_file_broken_fails_the_hook_and_the_pull_request_check(
    tmp_path: Path, vllm_release: Callable[[str], Path], release_cache: Path
) -> None:
    repo, env, _ = readme_recipe_repo(tmp_path, vllm_release("0.33.0"), release_cache)

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, cwd=repo, env=env, capture_output=True, text=True, timeout=1800
        )

    hook = (sys.executable, "-m", "pre_commit", "run", "--files", INTERFACES)
    diff_base = (sys.executable, "-m", "eagle3lint", "check", "--diff-base", "main")
    interfaces = repo / INTERFACES
    original = interfaces.read_text()
    assert original.count(GETTER) == 1

    interfaces.write_text(original.replace(GETTER, RENAMED))
    broken = run(*hook)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    named = {m.group(1) for line in broken.stdout.splitlines() if (m := NAMED.search(line))}
    # With the baseline, only what the rename broke shows: 75 targets whose models lack the
    # getter the runner still calls, each named beside the file it read.
    assert len(named) > 50 and {"DeepseekV3ForCausalLM", "GptOssForCausalLM"} <= named, named
    git(repo, "checkout", "-q", "-b", "rename-the-getter")
    git(repo, "commit", "-q", "-am", "rename the getter")
    pull_request = run(*diff_base)
    assert pull_request.returncode == 1, pull_request.stdout + pull_request.stderr
    assert "DeepseekV3ForCausalLM" in pull_request.stdout
    assert "interfaces.py (changed)" in pull_request.stdout

    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "harmless")
    interfaces.write_text(original + "\n\n# a harmless comment\n_HARMLESS = 1\n")
    harmless = run(*hook)
    assert harmless.returncode == 0, harmless.stdout + harmless.stderr
    assert re.search(r"eagle3lint\.+Passed", harmless.stdout), harmless.stdout
    git(repo, "commit", "-q", "-am", "a harmless edit")
    passed = run(*diff_base)
    assert passed.returncode == 0, passed.stdout + passed.stderr
