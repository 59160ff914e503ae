"""The parameter reference (docs/parameters.md) from every gin configurable's docstring.

Each configurable documents its settings in a "Settings:" section, one entry per setting:
"`NAME`: what it does, unit (default)" (tests/test_parameter_docs.py holds the code to that).
This module turns those sections into one page, with each setting's default taken from the code's
signature and the values the bundled configs (seed/configs/) give it. The docs build calls
`render()` through docs/hooks/parameters.py, so the page is made afresh on every build and there is
no committed copy to go stale. A configurable without a usable Settings section, or a setting
without an entry, stops the build: a reference with a hole in it would look complete.

    python docs/gen_parameters.py > /tmp/parameters.md     # the page, to read without mkdocs
"""
import inspect
import logging
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("seed", "actors", "learner")

# Sections of the page, in order: a configurable goes to the first whose module prefix matches.
# One in a module no section names still appears, under "Other", so a new module cannot hide one.
SECTIONS: list[tuple[str, str, tuple[str, ...]]] = [
    ("Learner", "The learner process: serving actors, batching, the frame budget, checkpoints, "
                "the optimizer and tf.distribute.",
     ("learner.settings", "learner.learner", "learner.optimizers", "learner.strategy")),
    ("Actors", "The actor processes, which step envs and stream them to the learner.", ("actors.",)),
    ("Environments", "The env families (seed/envs/); both roles read these.", ("seed.envs",)),
    ("Networks", "The networks the agents build (learner/networks.py).", ("learner.networks",)),
    ("V-trace", "The V-trace (IMPALA) agent, its loss and update, and the replay sources of a mix.",
     ("learner.agents.vtrace", "learner.data")),
    ("PPO", "The PPO agent, its loss and update.", ("learner.agents.ppo",)),
    ("R2D2", "The R2D2 agent and its update.", ("learner.agents.r2d2",)),
    ("SAC", "The SAC agent and its update.", ("learner.agents.sac",)),
    ("Benchmarks", "Agents that exist to measure the system, not to learn.", ("learner.agents.fixed_action",)),
]


class DocsError(Exception):
    """A configurable's docstring cannot be turned into the reference."""


def import_project():
    """Imports every module that registers configurables, as tests/test_parameter_docs.py does."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's start-up chatter is no part of a page
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    # TensorFlow's native code prints a few lines (CUDA probing) before it reads its log level; they
    # would land in every docs build's output. Python's own errors still come through: they are raised
    # after stderr is back.
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        import actors.actor  # noqa: F401
        import learner.agents  # noqa: F401
        import learner.learner  # noqa: F401
        import learner.networks  # noqa: F401
        import learner.optimizers  # noqa: F401
        import learner.settings  # noqa: F401
        import learner.strategy  # noqa: F401
        import seed.envs  # noqa: F401
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def configurables():
    """The project's registered configurables: (name, selector, module, the wrapped object)."""
    import gin
    found = []
    for _, configurable in gin.config._REGISTRY.items():  # gin has no public list of them
        if configurable.module.split(".")[0] in PACKAGES:
            found.append((configurable.name, configurable.selector, configurable.module, configurable.wrapped))
    return found


def settable(name: str, wrapped) -> list[inspect.Parameter]:
    """The parameters a binding may set: those with defaults, less the configurable's denylist
    (the rule tests/test_parameter_docs.py and seed/gin_setup.py apply)."""
    import gin
    function = wrapped.__init__ if inspect.isclass(wrapped) else wrapped
    denylist = set(gin.config._REGISTRY.get_match(name).denylist or ())
    return [p for p in inspect.signature(function).parameters.values()
            if p.default is not inspect.Parameter.empty and p.kind is not inspect.Parameter.VAR_KEYWORD
            and p.name not in denylist]


def docstring(wrapped) -> str:
    """The class's and its own __init__'s docstrings (an inherited __init__ says nothing about it)."""
    parts = [inspect.getdoc(wrapped)]
    own_init = vars(wrapped).get("__init__") if inspect.isclass(wrapped) else None
    if own_init is not None and own_init.__doc__:  # getdoc would fall back to object.__init__'s
        parts.append(inspect.cleandoc(own_init.__doc__))
    return "\n".join(filter(None, parts))


def parse(doc: str):
    """(summary, text before Settings, {name: text}, text after Settings) of a docstring.
    Entries are "`NAME`: text", continued on lines indented deeper; the section ends at a line
    back at the docstring's own indentation."""
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"^Settings:", line)), None)
    if start is None:
        raise DocsError("no 'Settings:' section")
    head = "\n".join(lines[:start]).strip()
    summary, _, before = head.partition("\n")
    inline = lines[start][len("Settings:"):].strip()  # "Settings: none; ..." for one without any
    entries: dict[str, list[str]] = {}
    current = None
    end = len(lines)
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line and not line[0].isspace():
            end = i
            break
        entry = re.match(r"^\s+`(\w+)`:\s*(.*)$", line)
        if entry:
            current = entry.group(1)
            if current in entries:
                raise DocsError(f"two entries for `{current}`")
            entries[current] = [entry.group(2)]
        elif line.strip():
            if current is None:
                raise DocsError(f"text before the first entry of its Settings section: {line.strip()!r}")
            entries[current].append(line.strip())
    after = "\n".join(lines[end:]).strip()
    return (summary.strip(), before.strip(), {k: " ".join(v) for k, v in entries.items()}, inline, after)


_MARKDOWN = re.compile(r"([\\*_\[\]<>#])")


def prose(text: str) -> str:
    """Docstring text as Markdown: code spans kept, characters Markdown would read escaped, so
    'pi/mu * x' or '<' stay what they say."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part)
        else:
            out.append(_MARKDOWN.sub(lambda m: {"<": "&lt;", ">": "&gt;"}.get(m.group(1), "\\" + m.group(1)), part))
    return "".join(out)


def paragraphs(text: str) -> str:
    """Docstring paragraphs as Markdown paragraphs (a docstring wraps its lines; a page should not)."""
    return "\n\n".join(prose(" ".join(p.split())) for p in re.split(r"\n\s*\n", text) if p.strip())


def value(v) -> str:
    """A value as a gin binding would write it."""
    import gin
    if isinstance(v, gin.config.ConfigurableReference):
        return str(v)
    if inspect.isclass(v) or inspect.isfunction(v):
        return f"@{v.__name__}"
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int) and abs(v) >= 10_000:
        return f"{v:_}"
    return repr(v)


def same(a, b) -> bool:
    """Whether a config's value is the default: 10 and 10.0 are, True and 1 are not."""
    if (isinstance(a, (int, float)) and isinstance(b, (int, float))
            and not isinstance(a, bool) and not isinstance(b, bool)):
        return float(a) == float(b)
    return value(a) == value(b)


def code(text: str) -> str:
    return "`" + text + "`"


def config_files() -> list[tuple[str, pathlib.Path, pathlib.Path]]:
    """(label, family config, the file itself) per bundled config; a task config is read alone,
    so it shows only what it changes on top of its family's."""
    from seed.gin_setup import CONFIG_DIR, TASK_CONFIG_DIR
    files = [(p.stem, p, p) for p in sorted(CONFIG_DIR.glob("*.gin"))]
    files += [(str(p.relative_to(CONFIG_DIR).with_suffix("")), p, p) for p in sorted(TASK_CONFIG_DIR.glob("*/*.gin"))]
    return files


def bundled_values(project) -> dict[tuple[str, str], dict[str, list[str]]]:
    """{(configurable, setting): {value: [config labels]}} for every value a bundled config binds
    that differs from the code's default."""
    import gin

    from seed.gin_setup import CONFIG_DIR
    defaults = {(name, p.name): p.default for name, _, _, wrapped in project for p in settable(name, wrapped)}
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    for label, _, path in config_files():
        gin.clear_config()
        gin.add_config_file_search_path(str(CONFIG_DIR))
        logging.disable(logging.ERROR)  # gin logs each include it first looks for relative to the cwd
        try:
            gin.parse_config_file(str(path))
        finally:
            logging.disable(logging.NOTSET)
        for name, selector, _, wrapped in project:
            for p in settable(name, wrapped):
                try:
                    bound = gin.query_parameter(f"{selector}.{p.name}")
                except ValueError:  # this config does not bind it
                    continue
                if not same(bound, defaults[(name, p.name)]):
                    found.setdefault((name, p.name), {}).setdefault(value(bound), []).append(label)
    gin.clear_config()
    return found


def _matches(module: str, prefix: str) -> bool:
    prefix = prefix.rstrip(".")
    return module == prefix or module.startswith(prefix + ".")


def section_of(module: str) -> int:
    """The index of the module's section in SECTIONS (len(SECTIONS): "Other")."""
    return next((i for i, (_, _, prefixes) in enumerate(SECTIONS) if any(_matches(module, p) for p in prefixes)),
                len(SECTIONS))


def order_key(entry):
    """Sections in SECTIONS' order, within one its prefixes' order, then the source's own order."""
    name, _, module, wrapped = entry
    index = section_of(module)
    prefixes = SECTIONS[index][2] if index < len(SECTIONS) else ()
    prefix = next((i for i, p in enumerate(prefixes) if _matches(module, p)), 0)
    try:
        line = inspect.getsourcelines(wrapped)[1]
    except (OSError, TypeError):
        line = 0
    return (index, prefix, module, line, name)


def render() -> str:
    """The whole page; raises DocsError naming every configurable whose docstring does not fit."""
    import_project()
    project = sorted(configurables(), key=order_key)
    problems = []
    parsed = {}
    for name, _, module, wrapped in project:
        params = settable(name, wrapped)
        try:
            summary, before, entries, inline, after = parse(docstring(wrapped))
        except DocsError as e:
            problems.append(f"{name} ({module}): {e}")
            continue
        names = [p.name for p in params]
        missing = [n for n in names if n not in entries]
        unknown = [n for n in entries if n not in names]
        if missing:
            problems.append(f"{name} ({module}): no \"`NAME`: ...\" entry for {', '.join(missing)}")
        if unknown:
            problems.append(f"{name} ({module}): entries for {', '.join(unknown)}, which a binding cannot set")
        if not names and not inline:
            problems.append(f"{name} ({module}): a Settings section with no settings should say why "
                            "('Settings: none; ...')")
        parsed[name] = (summary, before, entries, inline, after, params)
    if problems:
        raise DocsError("the parameter reference cannot be generated:\n  " + "\n  ".join(problems))

    configs = bundled_values(project)
    out = [
        "# Parameter reference",
        "",
        "Every setting of every gin configurable, generated from the docstrings in the code by "
        "`docs/gen_parameters.py`; building the docs, and so the test suite, fails when this page falls "
        "behind the code. Bind any of them with `--gin_bindings 'Configurable.setting=value'` or in a gin file "
        "([Configuration](configuration.md) says how).",
        "",
        "Each setting shows its default, the value in the code's signature, as a binding would write "
        "it; *Bundled configs* lists the configs in `seed/configs/` that bind another value (a task "
        "config such as `tasks/mujoco_ppo/Hopper-v5` applies on top of its family's config, here "
        "`mujoco_ppo`). A run's own values are in its operative config, "
        "`RUN_DIR/learner_operative_config.gin`.",
        "",
    ]
    current = None
    for name, _, module, _ in project:
        index = section_of(module)
        if index != current:
            current = index
            title, text = (SECTIONS[index][0], SECTIONS[index][1]) if index < len(SECTIONS) else ("Other", "")
            out += [f"## {title}", ""] + ([text, ""] if text else [])
        summary, before, entries, inline, after, params = parsed[name]
        out += [f"### {name}", "", f"`{module}` · {prose(summary)}", ""]
        if before:
            out += [paragraphs(before), ""]
        if not params:
            text = re.sub(r"^none\b[;:,]?\s*", "", inline.strip(), flags=re.I)
            out += [paragraphs(f"No settings: {text}" if text else "No settings."), ""]
        else:
            for p in params:
                text = prose(entries[p.name])
                text = text[:1].upper() + text[1:] if text[:1].islower() else text
                out += [f"`{p.name}` = {code(value(p.default))}", f":   {text}"]
                bound = configs.get((name, p.name), {})
                if bound:
                    where = " · ".join(f"{code(v)} in {', '.join(labels)}" for v, labels in bound.items())
                    out += ["", f"    *Bundled configs:* {where}"]
                out.append("")
        if after:
            out += [paragraphs(after), ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    try:
        sys.stdout.write(render())
    except DocsError as e:
        sys.exit(f"error: {e}")
