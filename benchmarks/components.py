"""Component throughputs on this machine and the end-to-end bound they imply.

    .venv/bin/python benchmarks/components.py [--config atari_vtrace.gin] [--seconds 5]

Prints one JSON object per line: raw env stepping through the actor's own
vectorised env path, policy inference per batch size (the whole inference path
and, within it, the network call; the rest per env is the path's overhead), the
bytes one stored unroll costs a replay, one V-trace training step at the
configured batch x unroll, and the bound 1 / sum(1 / throughput) that the three
speeds imply when they share the machine (as docs/architecture.md computes it).
No test asserts these numbers.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402


def timed(fn, seconds: float, warmup: int = 3, chunk: int = 1, between=None) -> float:
    """Calls fn until `seconds` of calls pass; returns calls per second. With `between`, that
    runs untimed after every `chunk` calls (work the measured part must not be charged for)."""
    for _ in range(warmup):
        fn()
    calls, elapsed = 0, 0.0
    while elapsed < seconds:
        start = time.perf_counter()
        for _ in range(chunk):
            fn()
        elapsed += time.perf_counter() - start
        calls += chunk
        if between is not None:
            between()
    return calls / elapsed


def emit(**record):
    print(json.dumps(record), flush=True)


def accelerators():
    """The devices TensorFlow computes on, e.g. ['CPU:0', 'GPU:0'] (GPU figures must say so)."""
    import tensorflow as tf
    return [f"{d.device_type}:{d.name.rsplit(':', 1)[-1]}" for d in tf.config.list_logical_devices()]


def vtrace_learner(spec):
    """The configured V-trace agent behind the learner's inference path, for a parsed gin config."""
    import gin

    from learner.agents import AgentContext, VTraceAgent
    from learner.inference import InferencePipeline
    stacked = gin.query_parameter("training.num_stacked_frames")
    agent = VTraceAgent(AgentContext(spec, stacked, 256, 10 ** 9))
    agent.data.queue.capacity = 10 ** 9  # nothing trains while inference is timed: never block on a full queue
    return agent, InferencePipeline(agent, spec, max_slots=256, num_stacked_frames=stacked,
                                    reward_clipping="abs_one")


class PolicyCallTimer:
    """Wraps the agent's batched policy to time the network call alone (its tensors' conversion to
    numpy is left outside, with the rest of the inference path)."""

    def __init__(self, agent):
        self._policy, self.calls, self.seconds = agent.policy, 0, 0.0
        agent.policy = self

    def __call__(self, *args):
        start = time.perf_counter()
        outputs = self._policy(*args)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return outputs

    def reset(self) -> None:
        self.calls, self.seconds = 0, 0.0

    def mean_ms(self) -> float:
        return 1000 * self.seconds / max(self.calls, 1)


def random_steps(spec, batch: int, rng):
    """(slot ids, one step of `batch` envs with random frames) for the learner's inference path."""
    from seed.codec import EnvStepBatch
    observations = rng.integers(0, 255, (batch, *spec.observation_shape)).astype(spec.observation_dtype)
    steps = EnvStepBatch.from_env(observations, np.zeros(batch, np.float32), np.zeros(batch, np.uint8),
                                  np.zeros(batch, bool))
    return np.arange(batch), steps


def drain_completed_unrolls(agent) -> None:
    """Takes completed unrolls off the queue as training would. Left to pile up, they cost the
    inference path fresh memory on every one (measured: 2x slower at batch 16 on the 2-core VM),
    which a real learner with its bounded queue never pays."""
    while len(agent.data.queue) >= agent.batch_size:
        agent.data.queue.get_batch(agent.batch_size)


def training_batch(agent, pipeline, spec, rng):
    """One batch of unrolls at the configured batch x unroll, assembled by the inference path and
    formed by the agent's data source (its observations stacked there)."""
    ids, steps = random_steps(spec, agent.batch_size, rng)
    while (batch := agent.data.next_batch(timeout_s=0)) is None:  # a replay mix fills its ring first
        pipeline(ids, steps)
    return batch


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="atari_vtrace.gin")
    parser.add_argument("--envs", type=int, default=16, help="envs stepped together (actors x envs per actor)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--env_stepping_only", action="store_true",
                        help="only the env stepping: one process's (an actor core's) rate for any env family")
    args = parser.parse_args()

    import gin
    import tensorflow as tf

    import actors.actor  # noqa: F401  (registers every configurable the configs name)
    import learner.learner  # noqa: F401
    from seed import envs as seed_envs
    from seed import gin_setup

    gin_setup.parse([args.config], [])
    envs = seed_envs.create_envs(args.envs)
    spec = envs.spec
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    if spec.action.is_discrete:
        random_actions = lambda: rng.integers(0, spec.num_actions, args.envs)  # noqa: E731
    else:
        low, high = np.asarray(spec.action.low, np.float32), np.asarray(spec.action.high, np.float32)
        random_actions = lambda: rng.uniform(low, high, (args.envs, *spec.action.shape)).astype(np.float32)  # noqa: E731
    env_steps = args.envs * timed(lambda: envs.step(random_actions()), args.seconds)
    emit(component="env_stepping", config=args.config, envs=args.envs, agent_steps_per_s=env_steps,
         frames_per_s=env_steps * spec.frames_per_step)
    if args.env_stepping_only:
        envs.close()
        return 0

    agent, pipeline = vtrace_learner(spec)
    policy_call = PolicyCallTimer(agent)
    inference = {}
    for batch in (1, 8, 16, 32, 64, 128):
        ids, steps = random_steps(spec, batch, rng)
        for _ in range(3):  # traces the policy for this batch size, untimed
            pipeline(ids, steps)
        policy_call.reset()
        inference[batch] = batch * timed(lambda ids=ids, steps=steps: pipeline(ids, steps), args.seconds, warmup=0,
                                         chunk=20, between=lambda: drain_completed_unrolls(agent))
        path_ms = 1000 * batch / inference[batch]
        policy_ms = policy_call.mean_ms()
        # Outside the network call: the slot table, frame stacking, the adder and every conversion.
        emit(component="inference", batch=batch, observations_per_s=inference[batch], path_ms_per_batch=path_ms,
             policy_call_ms_per_batch=policy_ms, outside_policy_us_per_env=1000 * (path_ms - policy_ms) / batch)

    # What one stored unroll costs a replay of this config (the queue's unrolls are the same).
    emit(component="replay_memory", unroll_bytes=agent.data.unroll_nbytes,
         unrolls_per_gib=2 ** 30 / agent.data.unroll_nbytes)
    batch = training_batch(agent, pipeline, spec, rng)
    training = agent.frames_per_update / spec.frames_per_step * timed(lambda: agent.update(batch), args.seconds, 2)
    emit(component="training_step", batch_size=agent.batch_size, agent_steps_per_s=training)

    # With every env connected in the batch, the learner serves min(cap, envs) per policy call.
    served = min(gin.query_parameter("inference.batch_size"), args.envs)
    served_batch = min(inference, key=lambda b: abs(b - served))
    bound = 1.0 / (1.0 / env_steps + 1.0 / inference[served_batch] + 1.0 / training)
    emit(component="bound", inference_batch=served_batch, agent_steps_per_s=bound,
         frames_per_s=bound * spec.frames_per_step, tensorflow=tf.__version__, cpus=os.cpu_count(),
         devices=accelerators())
    return 0


if __name__ == "__main__":
    sys.exit(main())
