"""`seed-eval`: load a run's checkpoint and play N episodes locally, no gRPC.

    seed-eval --logdir runs/Pong_vtrace_... --episodes 10 [--epsilon 0.01] [--json out.json]

The run's saved operative configs say which env and network to build. Actions
are greedy (argmax of the policy logits or Q-values, a Gaussian policy's mean) or epsilon-greedy
(uniform within the bounds for continuous actions).
"""
import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args(argv):
    from seed.gin_setup import add_gin_flags
    parser = argparse.ArgumentParser(prog="seed-eval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logdir", required=True, help="the run directory to evaluate")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--epsilon", type=float, default=0.0, help="probability of a random action (0: greedy)")
    parser.add_argument("--num_envs", type=int, default=1, help="envs played in parallel")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument("--video", default=None, metavar="FILE.mp4",
                        help="record the first env's first episode, as the agent sees it (image envs; needs "
                             "the `video` extra: .venv/bin/pip install -e '.[video]' in the checkout)")
    add_gin_flags(parser)
    args = parser.parse_args(argv)
    for name in ("episodes", "num_envs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if not 0.0 <= args.epsilon <= 1.0:
        parser.error(f"--epsilon must be between 0 and 1, got {args.epsilon}")
    return args


def evaluate(policy, envs, num_stacked_frames: int, episodes: int, epsilon: float, seed: int, recorder=None,
             on_episode=None, max_steps: int | None = None):
    """Plays until `episodes` episodes ended, or until `max_steps` policy calls (one step of every env
    each) were made; returns the ended episodes' (raw return, length in frames).
    `recorder(frame)` gets env 0's observations until its first episode ends;
    `on_episode(number, raw return, length in frames)` hears of each episode as it ends."""
    import numpy as np

    from learner.networks import EnvOutput
    from learner.slots import SlotTable
    from seed.codec import EnvStepBatch

    rng = np.random.default_rng(seed)
    n = envs.num_envs
    slot_ids = np.arange(n)
    action = envs.spec.action
    table = SlotTable(n, envs.spec.observation_shape, envs.spec.observation_dtype, num_stacked_frames,
                      policy.network.state_size, "none", action.wire_shape, action.wire_dtype)
    observations = envs.reset(seed=seed)
    steps = EnvStepBatch.from_env(observations, np.zeros(n, np.float32), np.zeros(n, np.uint8), np.zeros(n, bool))
    results = []
    calls = 0
    while len(results) < episodes and (max_steps is None or calls < max_steps):
        calls += 1
        step, finished = table.observe(slot_ids, steps)
        if recorder is not None:
            recorder(steps.observations[0])
            if any(e.slot == 0 for e in finished):
                recorder = None
        for e in finished[:episodes - len(results)]:
            results.append((e.raw_return, e.length * envs.spec.frames_per_step))
            if on_episode is not None:
                on_episode(len(results), *results[-1])
        outputs, state = policy.network(step.prev_action, EnvOutput(step.reward, step.first, step.observation),
                                        step.core_state)
        actions = policy.actions(outputs).astype(action.wire_dtype)
        explore = rng.random(n) < epsilon
        if action.is_discrete:
            actions[explore] = rng.integers(0, action.num_actions, explore.sum())
        else:  # uniform within the bounds
            low, high = (np.reshape(b, action.shape) for b in (action.low, action.high))
            actions[explore] = rng.uniform(low, high, (explore.sum(), *action.shape))
        table.act(slot_ids, actions, np.asarray(state))
        steps = EnvStepBatch.from_env(*envs.step(actions))
    return results


class VideoWriter:
    """Grayscale uint8 frames to an MP4 file (OpenCV), scaled up 4x so people can watch it."""

    def __init__(self, path: str, spec, fps: float = 15.0, scale: int = 4):
        if len(spec.observation_shape) != 2 or spec.observation_dtype != "uint8":
            raise ValueError(f"--video needs image observations, not {spec.describe()}")
        try:
            import cv2
        except ImportError:
            raise ValueError("--video needs OpenCV: .venv/bin/pip install -e '.[video]' in the checkout") from None
        self._cv2, self._scale = cv2, scale
        height, width = spec.observation_shape
        self._writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), fps,
                                       (width * scale, height * scale), isColor=False)
        if not self._writer.isOpened():
            raise ValueError(f"cannot write video {path!r}")
        self.frames = 0

    def __call__(self, frame) -> None:
        self._writer.write(self._cv2.resize(frame, None, fx=self._scale, fy=self._scale,
                                            interpolation=self._cv2.INTER_NEAREST))
        self.frames += 1

    def close(self) -> int:
        self._writer.release()
        return self.frames


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        load_run_configs(args.logdir, args.gin_config, args.gin_bindings)
        return _evaluate_run(args)
    except ValueError as e:
        print(f"seed-eval: error: {e}", file=sys.stderr)
        return 2


def load_run_configs(logdir: str, gin_config=(), gin_bindings=()) -> None:
    """Parses the run's saved operative configs (then `gin_config` files and `gin_bindings` over them), so
    that gin builds the env and network the run trained; ValueError where `logdir` holds none."""
    import actors.actor  # noqa: F401  registers every configurable the saved configs name
    import learner.learner  # noqa: F401  and every agent's (learner.agents)
    from seed import gin_setup

    configs = [os.path.join(logdir, f"{role}_operative_config.gin") for role in ("actor", "learner")]
    configs = [c for c in configs if os.path.exists(c)]
    if not configs:
        raise ValueError(f"no operative config in {logdir!r}; is it a seed run directory?")
    gin_setup.parse(configs + list(gin_config), list(gin_bindings))


def restore_policy(logdir: str, num_envs: int):
    """The run's agent name, evaluation policy restored from its latest checkpoint, `num_envs` envs of its
    env family and its frame stack, once the run's operative configs are parsed; ValueError (envs closed)
    where the agent has no weights or the run no checkpoint."""
    import gin
    import tensorflow as tf

    from learner.agents import AGENTS
    from seed import envs as seed_envs

    agent_name = gin.query_parameter("training.agent").scoped_configurable_fn.__name__
    stacked = gin.query_parameter("training.num_stacked_frames")
    envs = seed_envs.create_envs(num_envs)
    policy = AGENTS[agent_name].evaluation_policy(envs.spec, stacked)
    checkpoints = os.path.join(logdir, "checkpoints")
    latest = tf.train.latest_checkpoint(checkpoints)
    if policy is None or latest is None:
        envs.close()
        raise ValueError(f"{agent_name} has no evaluation policy (it has no weights to play)" if policy is None
                         else f"no checkpoint in {checkpoints!r}")
    tf.train.Checkpoint(agent=policy.network).restore(latest).expect_partial()
    return agent_name, policy, envs, stacked, latest


def _evaluate_run(args) -> int:
    import numpy as np

    _, policy, envs, stacked, latest = restore_policy(args.logdir, args.num_envs)
    video = VideoWriter(args.video, envs.spec) if args.video else None
    def progress(number, raw_return, frames):  # a Pong episode can take minutes: show each one
        print(f"episode {number}/{args.episodes}: return {raw_return:.1f}, {frames} frames", file=sys.stderr,
              flush=True)

    results = evaluate(policy, envs, stacked, args.episodes, args.epsilon, args.seed, video, progress)
    envs.close()
    if video is not None:
        print(f"recorded {video.close()} frames to {args.video}")
    returns = np.array([r for r, _ in results])
    lengths = np.array([n for _, n in results])
    summary = {"checkpoint": latest, "episodes": len(results), "epsilon": args.epsilon,
               "return_mean": float(returns.mean()), "return_median": float(np.median(returns)),
               "return_min": float(returns.min()), "return_max": float(returns.max()),
               "length_frames_mean": float(lengths.mean()), "length_frames_median": float(np.median(lengths)),
               "length_frames_min": int(lengths.min()), "length_frames_max": int(lengths.max()),
               "returns": returns.tolist(), "lengths_frames": lengths.tolist()}
    print(f"{len(results)} episodes from {latest}: return mean {summary['return_mean']:.1f} median "
          f"{summary['return_median']:.1f} min {summary['return_min']:.1f} max {summary['return_max']:.1f}, "
          f"length mean {summary['length_frames_mean']:.0f} median {summary['length_frames_median']:.0f} "
          f"min {summary['length_frames_min']} max {summary['length_frames_max']} frames")
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
