"""The documentation site builds with `mkdocs build --strict`: every page in the nav exists, no link
or anchor is broken, and the parameter reference could be generated from every configurable's
docstring (docs/hooks/parameters.py fails the build otherwise). mkdocs is in the test extra, so a
missing mkdocs is a failure here, not a skip."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_docs_build_strictly_with_the_generated_parameter_reference(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", NO_MKDOCS_2_WARNING="1")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    reference = (site / "parameters" / "index.html").read_text()
    # Spot checks that the generated page holds the tables, not just its heading.
    for name in ("training", "VTraceAgent", "create_atari_envs", "SACTrainer"):
        assert f'id="{name.lower()}"' in reference, f"the parameter reference has no section for {name}"
    assert "total_environment_frames" in reference
    for figure in ("architecture.svg", "data_path.svg"):
        assert (site / "img" / figure).is_file()


def test_the_parameter_reference_covers_every_configurable_the_docstring_test_checks():
    """The generator finds configurables in gin's registry; the docstring test keeps a list. Both must
    see the same set, or one of them misses a configurable."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_parameters", ROOT / "docs" / "gen_parameters.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.import_project()
    from tests.test_parameter_docs import CONFIGURABLES
    assert sorted(name for name, *_ in gen.configurables()) == sorted(CONFIGURABLES)
