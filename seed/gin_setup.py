"""Gin parsing shared by both roles.

Both roles read the same config files, but the actor must not import the
learner's modules (they pull in TensorFlow), so it cannot know the learner's
configurables. It parses with `skip_unknown=True`: bindings of configurables it
does not register are skipped, while a misspelt setting of one it does register
(`create_atari_envs.gmae`) still fails at start, and so does a name within a
few letters of one it registers (`run_actr.num_envs`). The learner registers
every configurable (its own, each registered agent's and the actor's) and
parses without skipping, so it refuses any misspelt configurable name; a run
whose actors and learner get the same bindings does not start with one.

Tuned settings for one task (as rl-baselines3-zoo keeps per task) live in
configs/tasks/<family config>/<GAME>.gin, e.g. tasks/mujoco_ppo/HalfCheetah-v5.gin:
when the first config is that family's and the GAME macro names that task, the
file is parsed right after the family config, so later configs and bindings
still override it.
"""
import argparse
import difflib
import inspect
import logging
import os
import pathlib
import re
from collections.abc import Iterable, Sequence

import gin

from seed.process import CONSOLE

CONFIG_DIR = pathlib.Path(__file__).resolve().parent / "configs"
TASK_CONFIG_DIR = CONFIG_DIR / "tasks"

log = logging.getLogger(__name__)


def add_gin_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gin_config", action="append", default=[], metavar="FILE",
                        help="gin config file; a bare name like atari_vtrace.gin is looked up in "
                             f"{CONFIG_DIR}. May be repeated.")
    parser.add_argument("--gin_bindings", action="append", default=[], metavar="BINDING",
                        help="gin binding such as 'create_atari_envs.game=\"Breakout\"'. May be repeated.")


def resolve_config_path(name: str) -> str:
    """A config file's path: `name` where it exists, else a bundled config of that bare name. A path
    with a folder that does not exist is refused rather than replaced by the bundled file of its name,
    which would run other settings than the ones the user meant."""
    path = pathlib.Path(name)
    if path.exists():
        return str(path)
    bundled = CONFIG_DIR / path.name
    if bundled.exists() and path.name == name:
        return str(bundled)
    available = ", ".join(sorted(p.name for p in CONFIG_DIR.glob("*.gin")))
    raise SystemExit(f"error: gin config {name!r} not found (bundled configs: {available}, by bare name)")


def parse(config_files: Sequence[str], bindings: Iterable[str], skip_unknown: bool = False) -> None:
    """Parses configs, then each binding, then finalizes; exits with one line on a bad file or binding.
    `skip_unknown` skips settings of configurables this process does not register (the actor's case).
    A task config for the chosen GAME (module docstring) goes in right after the first config."""
    gin.add_config_file_search_path(str(CONFIG_DIR))
    config_files, bindings = list(config_files), list(bindings)
    _parse_all(config_files, bindings, skip_unknown)
    task = task_config(config_files)
    if task is not None:  # the GAME is only known once everything is parsed: parse again with it in place
        gin.clear_config()
        _parse_all(config_files[:1] + [task] + config_files[1:], bindings, skip_unknown)
        log.info("the task's tuned settings: %s (after %s; later configs and bindings override them)",
                 task, config_files[0])
    try:
        gin.finalize()
    except _GIN_ERRORS as e:
        _fail("bad gin configuration", e)


def task_config(config_files: Sequence[str]):
    """The path of the tuned settings for the GAME just parsed under the first config's family and
    agent (tasks/mujoco_ppo/HalfCheetah-v5.gin), or None when there are none or they are given already."""
    if not config_files:
        return None
    try:
        game = gin.query_parameter("%GAME")
    except ValueError:  # a config without a GAME macro
        return None
    path = TASK_CONFIG_DIR / pathlib.Path(resolve_config_path(config_files[0])).stem / f"{game}.gin"
    if not path.is_file():
        return None
    given = {pathlib.Path(resolve_config_path(name)).resolve() for name in config_files}
    return None if path.resolve() in given else str(path)


def _parse_all(config_files: Sequence[str], bindings: Sequence[str], skip_unknown: bool) -> None:
    if skip_unknown:
        _refuse_near_misses([(resolve_config_path(name), None) for name in config_files] +
                            [(None, binding) for binding in bindings])
    for name in config_files:
        path = resolve_config_path(name)
        try:
            gin.parse_config_file(path, skip_unknown)
        except _GIN_ERRORS as e:
            # gin's second line says where: 'In file "x.gin", line 3'.
            lines = str(e).splitlines()
            where = lines[1].strip() if len(lines) > 1 else f"in {path}"
            _fail("bad gin configuration", e, f" ({where[:1].lower()}{where[1:]})")
    for binding in bindings:
        try:
            gin.parse_config(binding, skip_unknown)
        except _GIN_ERRORS as e:
            _fail(f"bad gin binding {binding!r}", e)


_GIN_ERRORS = (ValueError, KeyError, SyntaxError, TypeError)
_SELECTOR = re.compile(r"^\s*([A-Za-z_][\w./]*)\.[A-Za-z_]\w*\s*=", re.M)


def _refuse_near_misses(sources) -> None:
    """Skipping unknown configurables must not skip a misspelt name of one this process registers
    (`run_actr.num_envs`): such a name, within a few letters of a registered one, fails here."""
    registered = {name.split(".")[-1] for name in _registered_names()}
    for path, binding in sources:
        text = binding if path is None else pathlib.Path(path).read_text()
        for selector in _SELECTOR.findall(text):
            name = selector.split("/")[-1].split(".")[-1]
            guess = difflib.get_close_matches(name, sorted(registered), n=1, cutoff=0.85)
            if name not in registered and guess:
                what = f"bad gin binding {binding!r}" if path is None else f"bad gin configuration (in {path})"
                raise SystemExit(f"error: {what}: No configurable matching '{name}'; did you mean '{guess[0]}'?")


def _fail(what: str, error: Exception, where: str = "") -> None:
    lines = str(error).splitlines()
    raise SystemExit(f"error: {what}: {_explain(lines[0] if lines else type(error).__name__)}{where}") from None


def _explain(message: str) -> str:
    """gin's first line, plus the nearest known name when it is a typo of one."""
    unknown_parameter = re.match(r"Configurable '(.+)' doesn't have a parameter named '(.+)'", message)
    if unknown_parameter:
        name, parameter = unknown_parameter.groups()
        settings = _settings_of(name)
        guess = difflib.get_close_matches(parameter, settings, n=1)
        hint = f"; did you mean '{guess[0]}'?" if guess else ""
        listed = f" ({name}'s settings: {', '.join(settings)})" if settings else ""
        return f"{message.rstrip('.')}{hint}{listed}"
    unknown_configurable = re.match(r"No configurable matching '([^']+)'", message)
    if unknown_configurable and unknown_configurable.group(1) == "run_learner":
        return f"{message.rstrip('.')}; {REGROUPED}"
    if unknown_configurable:
        guess = difflib.get_close_matches(unknown_configurable.group(1).split(".")[-1], _registered_names(), n=1)
        if guess:
            return f"{message.rstrip('.')}; did you mean '{guess[0]}'?"
    return message


def _settings_of(name: str) -> list:
    """The parameters a binding may set: those with defaults (the code passes the others), less
    the configurable's denylist."""
    try:
        signature = inspect.signature(gin.get_configurable(name))
    except (ValueError, TypeError):
        return []
    try:  # gin keeps the denylist only in its private registry
        denied = set(gin.config._REGISTRY.get_match(name).denylist or ())
    except AttributeError:
        denied = set()
    return sorted(p.name for p in signature.parameters.values()
                  if p.default is not inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD
                  and p.name not in denied)


def _registered_names() -> list:
    try:  # gin has no public list of its configurables; without one there is no suggestion
        return sorted({configurable.name for _, configurable in gin.config._REGISTRY.items()})
    except AttributeError:
        return []


#: Settings a resumed run may change without being refused: they move the stop or lay out the
#: processes or the device, and leave what is learned per frame alone (the schedules have training.schedule_frames).
RESUMABLE_CHANGES = ("training.total_environment_frames", "run_actor.num_envs", "inference.device")
REQUESTED_CONFIG = "requested_config.gin"
#: What an old binding of the learner's settings is told (they were run_learner's parameters until
#: 2026-12-02).
REGROUPED = ("the learner's settings are in four groups now: training.*, inference.*, service.* and reporting.* "
             "(run_learner.inference_batch_size is inference.batch_size; docs/configuration.md); a run directory "
             "written before that needs the version that wrote it, or start a fresh run")


def gin_settings(config_text: str) -> dict[str, str]:
    """`Configurable.parameter` (or a macro) -> value text, from gin's config text (comments, blank
    lines and imports dropped; a value continued over several lines is joined)."""
    settings, name = {}, None
    for line in config_text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.startswith("import "):
            continue
        match = re.match(r"^([\w./]+)\s*=\s*(.*)$", line)
        if match and not line[0].isspace():
            name = match.group(1)
            settings[name] = match.group(2).strip()
        elif name is not None:
            settings[name] += " " + line.strip()
    return settings


def check_requested_config(logdir: str, resuming: bool, allow_changes: bool) -> None:
    """Refuses to resume `logdir` with other settings than it was started with (a checkpoint restores
    whatever has the same shapes, so a changed algorithm would train on silently), unless
    `allow_changes`; saves what is asked for now as LOGDIR/requested_config.gin for the next resume.
    Changes in RESUMABLE_CHANGES are allowed."""
    path = os.path.join(logdir, REQUESTED_CONFIG)
    now = gin.config_str()
    if resuming and os.path.exists(path):
        with open(path) as f:
            before = gin_settings(f.read())
        if any(k.startswith("run_learner.") for k in before):
            raise ValueError(f"{logdir} was started with run_learner.* settings; {REGROUPED} "
                             "(run_local.sh --new, or another --logdir)")
        after = gin_settings(now)
        changed = sorted(k for k in before.keys() | after.keys()
                         if before.get(k) != after.get(k) and k not in RESUMABLE_CHANGES)
        if changed and not allow_changes:
            differences = "; ".join(f"{k} was {before.get(k, '(unset)')}, now {after.get(k, '(unset)')}"
                                    for k in changed)
            raise ValueError(f"{logdir} was started with other settings ({differences}): start a fresh run "
                             "(run_local.sh --new, or another --logdir), or resume this one with the change "
                             "(--resume_with_changes)")
        if changed:
            log.warning("resuming %s with changed settings (--resume_with_changes): %s", logdir, ", ".join(changed))
    with open(path + ".tmp", "w") as f:
        f.write(now)
    os.replace(path + ".tmp", path)


def save_operative_config(logdir: str, role: str) -> str:
    """Logs the operative config (the settings the run's code read, defaults included) and writes it to
    LOGDIR/<role>_operative_config.gin; what a resume may change is check_requested_config's to say."""
    text = gin.operative_config_str()
    path = os.path.join(logdir, f"{role}_operative_config.gin")
    with open(path, "w") as f:
        f.write(text)
    log.info("operative gin config (saved to %s):\n%s", path, text)
    log.info("the settings in force are in %s", path, extra=CONSOLE)
    return path
