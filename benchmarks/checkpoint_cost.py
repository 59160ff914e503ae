"""What one checkpoint costs, per bundled config: seconds to write and bytes on disk.

    .venv/bin/python benchmarks/checkpoint_cost.py [--configs atari_vtrace.gin atari_r2d2.gin ...] [--saves 5]

Builds each config's agent as the learner does (the same gin file, env spec and Checkpointer),
trains nothing, and times `--saves` checkpoint writes into a temporary directory. Prints one JSON
line per config: median and max seconds per save, bytes of one checkpoint (its data and index
files), and the fraction of learner time a save every `training.checkpoint_interval_s` costs.
What a crash loses is up to one interval of training; this is what a shorter interval costs.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, REPO)

CONFIGS = ("atari_vtrace.gin", "atari_r2d2.gin", "classic_vtrace.gin", "classic_r2d2.gin")


def measure(config: str, saves: int) -> dict:
    import gin
    import tensorflow as tf

    import actors.actor  # noqa: F401  (its configurables, so the learner config parses whole)
    from learner import learner as learner_module  # noqa: F401  registers the agents
    from learner.agents import AgentContext
    from learner.checkpoints import Checkpointer
    from learner.settings import TrainingSettings
    from seed import envs, gin_setup

    gin.clear_config()
    gin_setup.parse([config], [])
    training = TrainingSettings()  # as the config binds it
    interval = training.checkpoint_interval_s
    spec = envs.env_spec()
    agent = training.agent(AgentContext(spec, training.num_stacked_frames, 256, 10 ** 9))
    frames = tf.Variable(0, dtype=tf.int64, name="environment_frames")
    with tempfile.TemporaryDirectory() as directory:
        checkpointer = Checkpointer(directory, environment_frames=frames, **agent.trackables())
        seconds = []
        for _ in range(saves):
            started = time.perf_counter()
            checkpointer.save()
            seconds.append(time.perf_counter() - started)
        latest = checkpointer.latest
        size = sum(os.path.getsize(p) for p in glob.glob(latest + ".*"))
    return {"benchmark": "checkpoint_cost", "config": config, "saves": saves,
            "median_s": round(statistics.median(seconds), 4), "max_s": round(max(seconds), 4),
            "first_s": round(seconds[0], 4), "bytes": size, "checkpoint_interval_s": interval,
            "share_of_time": round(statistics.median(seconds) / interval, 6)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS))
    parser.add_argument("--saves", type=int, default=5)
    args = parser.parse_args()
    if args.saves < 1:
        parser.error("--saves must be positive")
    for config in args.configs:
        print(json.dumps(measure(config, args.saves)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
