"""The V-trace update's minibatch loop in Python against in one compiled call, side by side.

    .venv/bin/python benchmarks/update_loop.py [--seconds 5] [--rounds 3] [--xla] [--gin_bindings B ...]

Times VTraceAgent.update (atari_vtrace.gin's epochs x minibatches over one batch of unrolls, plus
any bindings given, e.g. VTraceAgent.batch_size=64) with `VTraceTrainer.minibatch_loop_in_graph` off
('python': one compiled call per gradient step) and on ('graph': one call per batch), and with
`--xla` also on under `jit_compile` ('graph_xla'), alternating the modes in every round so that a
noisy machine moves all alike. Prints one JSON line per measurement, then one per mode with its
median updates/s and its median ratio to 'python' (above 1: faster).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from components import accelerators, emit, timed, training_batch, vtrace_learner  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--xla", action="store_true", help="also time the in-graph loop under XLA")
    parser.add_argument("--gin_bindings", action="append", default=[])
    args = parser.parse_args()

    import gin
    import numpy as np
    import tensorflow as tf

    import actors.actor  # noqa: F401  (registers every configurable the configs name)
    import learner.learner  # noqa: F401
    from seed import envs as seed_envs
    from seed import gin_setup

    gin_setup.parse(["atari_vtrace.gin"], args.gin_bindings)
    spec = seed_envs.env_spec()
    rng = np.random.default_rng(0)
    modes = {"python": (False, False), "graph": (True, False), **({"graph_xla": (True, True)} if args.xla else {})}
    updates = {}
    for mode, (in_graph, jit) in modes.items():
        with gin.unlock_config():
            gin.bind_parameter("VTraceTrainer.minibatch_loop_in_graph", in_graph)
            gin.bind_parameter("VTraceTrainer.jit_compile", jit)
        agent, pipeline = vtrace_learner(spec)
        batch = training_batch(agent, pipeline, spec, rng)
        started = time.perf_counter()
        agent.update(batch)
        emit(mode=mode, first_call_s=time.perf_counter() - started)
        updates[mode] = lambda agent=agent, batch=batch: agent.update(batch)

    measured = {}
    for _ in range(args.rounds):
        for mode, call in updates.items():
            rate = timed(call, args.seconds, warmup=1)
            measured.setdefault(mode, []).append(rate)
            emit(mode=mode, updates_per_s=rate)
    steps = gin.query_parameter("VTraceAgent.epochs") * gin.query_parameter("VTraceAgent.minibatches")
    for mode, rates in measured.items():
        emit(mode=mode, summary=True, updates_per_s_median=statistics.median(rates),
             ms_per_gradient_step=1000 / statistics.median(rates) / steps,
             over_python_median=statistics.median(r / p for r, p in zip(rates, measured["python"])),
             batch_size=gin.query_parameter("VTraceAgent.batch_size"), gradient_steps_per_update=steps,
             tensorflow=tf.__version__, cpus=os.cpu_count(), devices=accelerators())
    return 0


if __name__ == "__main__":
    sys.exit(main())
