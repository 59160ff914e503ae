"""The code keeps the linter's rules (pyproject.toml's [tool.ruff]): ruff is in the test extra, so the
README's test command lints every run, and a missing ruff is a failure here, not a skip."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (f"ruff check found problems (fix them, or .venv/bin/ruff check --fix . for the "
                                    f"mechanical ones):\n{result.stdout}{result.stderr}")
