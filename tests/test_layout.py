"""The layout's import rules, read from the source (docs/architecture.md): `seed/` is shared by both
roles and imports neither; the roles do not import each other; agents are made of the data kit,
networks and the agent kit and never import the learner's plumbing; the data kit imports no agent
and no plumbing either."""
import ast
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
PLUMBING = ("learner.batcher", "learner.service", "learner.inference", "learner.slots", "learner.checkpoints",
            "learner.training_loop", "learner.learner", "learner.progress", "learner.main")
# The learner's entry points parse the run's config files, which bind both roles' settings: they import the
# actor's module only so that gin knows its configurables and checks every binding.
ALLOWED = {"learner/main.py imports actors.actor", "learner/evaluate.py imports actors.actor"}


def imported_modules(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def violations(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in sorted((REPO_ROOT / folder).rglob("*.py")):
        for name in sorted(imported_modules(path)):
            line = f"{path.relative_to(REPO_ROOT)} imports {name}"
            if any(name == f or name.startswith(f + ".") for f in forbidden) and line not in ALLOWED:
                found.append(line)
    return found


@pytest.mark.parametrize("folder, forbidden", [
    ("seed", ("actors", "learner")),
    ("actors", ("learner",)),
    ("learner", ("actors",)),
    ("learner/agents", PLUMBING),
    ("learner/data", PLUMBING + ("learner.agents",)),
])
def test_imports_follow_the_layout(folder, forbidden):
    assert violations(folder, forbidden) == []


def test_the_rules_see_an_import_that_breaks_them(tmp_path):
    module = tmp_path / "bad.py"
    module.write_text("import os\nfrom learner.batcher import InferenceBatcher\n")
    assert "learner.batcher" in imported_modules(module)
