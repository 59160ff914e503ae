"""mkdocs hook: fails the build when the committed docs/parameters.md differs from what
docs/gen_parameters.py makes of the code's docstrings, or when a configurable's docstring does not
document its settings. The page is committed so that it reads on GitHub too; the check keeps it
from falling behind the code."""
import importlib.util
import pathlib

from mkdocs.exceptions import PluginError

GENERATOR = pathlib.Path(__file__).resolve().parent.parent / "gen_parameters.py"
PAGE = "parameters.md"


def _generator():
    spec = importlib.util.spec_from_file_location("seed_docs_gen_parameters", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files, config):
    generator = _generator()
    try:
        content = generator.render()
    except generator.DocsError as e:
        raise PluginError(str(e)) from None
    except ImportError as e:  # the project itself is not importable from this Python
        raise PluginError(f"the parameter reference imports the project, which failed: {e}; "
                          "build the docs with the project's venv (.venv/bin/python -m mkdocs build)") from None
    committed = GENERATOR.parent / PAGE
    if not committed.exists() or committed.read_text() != content:
        raise PluginError(f"docs/{PAGE} is not what the code's docstrings make of it; regenerate it with "
                          f".venv/bin/python docs/gen_parameters.py > docs/{PAGE}")
    return files
