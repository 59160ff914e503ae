"""Gin parsing shared by both roles.

Both roles read the same config files, but the actor must not import the
learner's modules (they pull in TensorFlow). The actor therefore skips exactly
the configurables listed in LEARNER_CONFIGURABLES and nothing else, so a typo
still fails at start in both roles; a test keeps that list equal to what the
learner registers.
"""
import argparse
import logging
import os
import pathlib
from typing import Iterable, Sequence

import gin

CONFIG_DIR = pathlib.Path(__file__).resolve().parent / "configs"

LEARNER_CONFIGURABLES = frozenset({
    "run_learner", "create_optimizer", "create_strategy", "VTraceAgent", "VTraceLoss", "VTraceTrainer",
    "ActorCriticNetwork", "R2D2Agent", "R2D2Trainer", "DuelingQNetwork", "FixedActionAgent",
})

log = logging.getLogger(__name__)


def add_gin_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gin_config", action="append", default=[], metavar="FILE",
                        help="gin config file; a bare name like atari_vtrace.gin is looked up in "
                             f"{CONFIG_DIR}. May be repeated.")
    parser.add_argument("--gin_bindings", action="append", default=[], metavar="BINDING",
                        help="gin binding such as 'create_atari_envs.game=\"Breakout\"'. May be repeated.")


def resolve_config_path(name: str) -> str:
    path = pathlib.Path(name)
    if path.exists():
        return str(path)
    bundled = CONFIG_DIR / path.name
    if bundled.exists():
        return str(bundled)
    available = ", ".join(sorted(p.name for p in CONFIG_DIR.glob("*.gin")))
    raise SystemExit(f"error: gin config {name!r} not found (bundled configs: {available})")


def parse(config_files: Sequence[str], bindings: Iterable[str], skip: Iterable[str] = ()) -> None:
    """Parses configs and bindings; exits with gin's own message on an unknown or bad binding."""
    gin.add_config_file_search_path(str(CONFIG_DIR))
    try:
        gin.parse_config_files_and_bindings([resolve_config_path(f) for f in config_files],
                                            list(bindings), skip_unknown=sorted(skip) or False)
    except (ValueError, KeyError, SyntaxError, TypeError) as e:
        raise SystemExit(f"error: bad gin configuration: {e}") from None


def save_operative_config(logdir: str, role: str) -> str:
    """Prints the operative config and writes it to LOGDIR/<role>_operative_config.gin."""
    text = gin.operative_config_str()
    path = os.path.join(logdir, f"{role}_operative_config.gin")
    with open(path, "w") as f:
        f.write(text)
    log.info("operative gin config (saved to %s):\n%s", path, text)
    return path
