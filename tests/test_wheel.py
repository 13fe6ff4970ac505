"""`pip install` of the built wheel: every module and data file is in it, and the installed
tool gives the answers the checkout gives (what users of a tag get)."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from test_precommit import snapshot_of_this_repo
from typer.testing import CliRunner

from eagle3lint import __version__
from eagle3lint.cli import app

REPO = Path(__file__).resolve().parent.parent
ERA = REPO / "fixtures" / "eras" / "e2_stub"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel built from a snapshot of the working tree, and the `bin` of a fresh venv it
    is installed in (this environment's packages importable there, so nothing is downloaded)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = snapshot_of_this_repo(tmp / "source")
    offline = ["-q", "--no-deps", "--no-index"]
    build = ["wheel", *offline, "--no-build-isolation", "-w", str(tmp / "dist"), str(source)]
    subprocess.run([sys.executable, "-m", "pip", *build], check=True)
    [wheel] = (tmp / "dist").glob("eagle3lint-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = (venv / "lib").glob("python3*/site-packages")
    (site / "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", *offline, str(wheel)], check=True
    )
    return wheel, venv / "bin"


def test_the_wheel_holds_every_module_and_data_file(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    assert wheel.name.startswith(f"eagle3lint-{__version__}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "eagle3lint").rglob("*.py")}
    rules = {f"eagle3lint/rules/{p.name}" for p in (REPO / "rules").glob("*.py")}
    assert modules | rules <= names
    data = {"eagle3lint/matrix/page.css", "eagle3lint/matrix/page.js"}
    assert data | {"eagle3lint/engines/vllm/contract/newest.json"} <= names


def test_the_installed_tool_answers_as_the_checkout(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, bin_dir = installed
    tool = str(bin_dir / "eagle3lint")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )

    located = subprocess.run(
        [str(bin_dir / "python"), "-c", "import eagle3lint; print(eagle3lint.__file__)"],
        cwd=tmp_path,  # not the checkout, whose eagle3lint/ the working directory would import
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(located).is_relative_to(bin_dir.parent)  # the wheel's, not the checkout's
    assert run("--version").stdout.strip() == f"eagle3lint {__version__}"
    assert run("rules").stdout == CliRunner().invoke(app, ["rules"]).stdout
    args = ["check", str(ERA / "vllm"), "--require", "*", "--format", "json", "--no-cache"]
    installed_report = run(*args)
    assert installed_report.returncode == 1, installed_report.stderr
    assert json.loads(installed_report.stdout) == json.loads(CliRunner().invoke(app, args).stdout)
    page = tmp_path / "matrix.html"
    matrix = run("matrix", str(ERA / "vllm"), "--format", "html", "-o", str(page))
    assert matrix.returncode in (0, 1), matrix.stderr
    assert "<style>" in page.read_text() and "<script>" in page.read_text()
