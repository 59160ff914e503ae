"""mkdocs hook: adds parameters.md, generated from the code's docstrings (docs/gen_parameters.py).

Made on every build rather than committed, so the reference cannot fall behind the code; a
configurable whose docstring does not document its settings fails the build with its name."""
import importlib.util
import pathlib

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

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
    existing = files.get_file_from_path(PAGE)
    if existing is not None:  # a stray committed copy would shadow the generated page
        files.remove(existing)
    files.append(File.generated(config, PAGE, content=content))
    return files
