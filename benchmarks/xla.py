"""XLA (`jit_compile`) against TensorFlow's default graph mode, side by side.

    .venv/bin/python benchmarks/xla.py [--seconds 5] [--rounds 3] [--r2d2_batch 4]

Times one V-trace training step at atari_vtrace.gin's batch x unroll with
`VTraceTrainer.jit_compile` off and on, the V-trace policy call at a few batch
sizes compiled both ways, and one R2D2 training step (atari_r2d2.gin's network
and sequence length, `--r2d2_batch` sequences: the configured 64 takes long on
a CPU) with `R2D2Trainer.jit_compile` off and on, alternating the two in every
round so that a noisy machine moves both alike. Prints one JSON line per
measurement, then one per component with the median ratio xla / default
(above 1: XLA is faster).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from components import accelerators, emit, timed, training_batch, vtrace_learner  # noqa: E402


def r2d2_updates(spec, batch_size: int, rng):
    """{'default' / 'xla': one R2D2 update on random sequences}, for a parsed R2D2 config."""
    import gin
    import numpy as np

    from learner.agents.r2d2.training import R2D2Trainer
    from learner.networks import DuelingQNetwork
    from learner.optimizers import create_optimizer
    stacked = gin.query_parameter("training.num_stacked_frames")
    burn_in, unroll = gin.query_parameter("R2D2Agent.burn_in"), gin.query_parameter("R2D2Agent.unroll_length")
    steps, shape = burn_in + unroll + 1, (*spec.observation_shape, stacked)
    updates = {}
    for mode, jit in (("default", False), ("xla", True)):
        online, target = (DuelingQNetwork(spec.num_actions, shape, spec.observation_dtype) for _ in range(2))
        trainer = R2D2Trainer(online, target, create_optimizer(num_training_steps=1), burn_in=burn_in,
                              jit_compile=jit)
        sequences = {  # time-major, as the replay forms them
            "observation": rng.integers(0, 255, (steps, batch_size, *shape)).astype(spec.observation_dtype),
            "first": rng.random((steps, batch_size)) < 0.01, "terminated": np.zeros((steps, batch_size), bool),
            "truncated": np.zeros((steps, batch_size), bool),
            "reward": rng.normal(size=(steps, batch_size)).astype(np.float32),
            "action": rng.integers(0, spec.num_actions, (steps, batch_size)).astype(np.int32),
            "prev_action": rng.integers(0, spec.num_actions, (steps, batch_size)).astype(np.int32),
            "core_state": np.zeros((batch_size, online.state_size), np.float32)}
        weights = np.ones(batch_size, np.float32)
        started = time.perf_counter()
        trainer.update(sequences, weights)
        emit(component="r2d2_training_step", mode=mode, first_call_s=time.perf_counter() - started)
        updates[mode] = lambda trainer=trainer, sequences=sequences, weights=weights: trainer.update(sequences, weights)
    return updates


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 64], help="policy call batch sizes")
    parser.add_argument("--r2d2_batch", type=int, default=4, help="R2D2 sequences per update (0: skip R2D2)")
    args = parser.parse_args()

    import gin
    import numpy as np
    import tensorflow as tf

    import actors.actor  # noqa: F401  (registers every configurable the configs name)
    import learner.learner  # noqa: F401
    from learner.networks import EnvOutput
    from seed import envs as seed_envs
    from seed import gin_setup

    gin_setup.parse(["atari_vtrace.gin"], [])
    spec = seed_envs.env_spec()
    rng = np.random.default_rng(0)
    agents, batches = {}, {}
    for mode, jit in (("default", False), ("xla", True)):
        with gin.unlock_config():
            gin.bind_parameter("VTraceTrainer.jit_compile", jit)
        agent, pipeline = vtrace_learner(spec)
        agents[mode], batches[mode] = agent, training_batch(agent, pipeline, spec, rng)
        started = time.perf_counter()
        agent.update(batches[mode])
        emit(component="vtrace_training_step", mode=mode, first_call_s=time.perf_counter() - started)

    # The agents' policy step as written, once in graph mode and once compiled by XLA.
    policy = agents["default"].policy
    policies = {"default": policy, "xla": tf.function(policy.python_function, jit_compile=True,
                                                      input_signature=policy.input_signature)}
    network = agents["default"].network

    def policy_call(fn, batch):
        frames = rng.integers(0, 255, (batch, *network.observation_shape)).astype(network.observation_dtype)
        inputs = (np.zeros(batch, np.int32), EnvOutput(np.zeros(batch, np.float32), np.zeros(batch, bool), frames),
                  np.zeros((batch, network.state_size), np.float32))
        return lambda: [x.numpy() for x in fn(*inputs)]

    measurements = {"vtrace_training_step": {mode: lambda mode=mode: agents[mode].update(batches[mode])
                                             for mode in policies}}
    for batch in args.batches:
        measurements[f"policy_batch_{batch}"] = {mode: policy_call(fn, batch) for mode, fn in policies.items()}
    if args.r2d2_batch:
        gin.clear_config()
        gin_setup.parse(["atari_r2d2.gin"], [])
        measurements["r2d2_training_step"] = r2d2_updates(spec, args.r2d2_batch, rng)

    measured = {}
    for _ in range(args.rounds):
        for component, calls in measurements.items():
            batch = int(component.rsplit("_", 1)[1]) if component.startswith("policy") else 1
            for mode, call in calls.items():
                rate = batch * timed(call, args.seconds, warmup=1)
                measured.setdefault(component, {}).setdefault(mode, []).append(rate)
                emit(component=component, mode=mode, per_s=rate,
                     unit="observations" if component.startswith("policy") else "updates")
    for component, rates in measured.items():
        ratios = [xla / default for xla, default in zip(rates["xla"], rates["default"])]
        emit(component=component, summary=True, xla_over_default_median=statistics.median(ratios),
             ratios=ratios, tensorflow=tf.__version__, cpus=os.cpu_count(), devices=accelerators())
    return 0


if __name__ == "__main__":
    sys.exit(main())
