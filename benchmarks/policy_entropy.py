"""How a run's policy spreads over actions, state by state: play its latest checkpoint on its own env,
sampling actions as acting does, and report each step's policy entropy and the actions taken.

    .venv/bin/python benchmarks/policy_entropy.py RUN_DIR [--steps 2000] [--num_envs 2] [--json out.json]

A learner's progress line gives the entropy's mean over a batch; this tells a policy that is narrow in
a few states (a low tail) from one that is equally narrow everywhere (quantiles close together). For
policy agents with discrete actions (V-trace, PPO); prints one JSON line.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

POLICY_AGENTS = ("VTraceAgent", "PPOAgent")
QUANTILES = (5, 25, 50, 75, 95)
THRESHOLDS = (0.1, 0.5, 1.0)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="a run directory (its operative configs and checkpoints)")
    parser.add_argument("--steps", type=int, default=2000, help="policy calls, one step of every env each")
    parser.add_argument("--num_envs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None, help="also write the result to this file")
    args = parser.parse_args(argv)
    for name in ("steps", "num_envs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    return args


class SamplingPolicy:
    """The evaluation policy's network, its actions sampled from softmax(logits) as acting samples them;
    keeps every step's entropy (nats) and action."""

    def __init__(self, policy, seed: int):
        self.network, self._scores = policy.network, policy.scores
        self._rng = np.random.default_rng(seed)
        self.entropies, self.actions_taken = [], []

    def actions(self, outputs) -> np.ndarray:
        logits = np.asarray(self._scores(outputs), np.float64)
        log_p = logits - logits.max(-1, keepdims=True)
        log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
        p = np.exp(log_p)
        self.entropies.extend(-(p * log_p).sum(-1))
        # Inverse-CDF sampling, one uniform per env.
        actions = (p.cumsum(-1) < self._rng.random((len(p), 1))).sum(-1).clip(0, p.shape[-1] - 1)
        self.actions_taken.extend(actions)
        return actions.astype(np.int32)


def measure(run_dir: str, steps: int, num_envs: int, seed: int) -> dict:
    from learner.evaluate import evaluate, load_run_configs, restore_policy

    load_run_configs(run_dir)
    agent_name, policy, envs, stacked, checkpoint = restore_policy(run_dir, num_envs)
    try:
        if agent_name not in POLICY_AGENTS or policy.scores is None:
            raise ValueError(f"{agent_name} is not a policy agent with discrete actions; use a run of "
                             f"{', '.join(POLICY_AGENTS)}")
        sampling = SamplingPolicy(policy, seed)
        episodes = evaluate(sampling, envs, stacked, episodes=10 ** 9, epsilon=0.0, seed=seed, max_steps=steps)
        num_actions = envs.spec.action.num_actions
    finally:
        envs.close()
    entropy = np.array(sampling.entropies)
    return {"run": run_dir, "checkpoint": checkpoint, "agent": agent_name, "env_steps": len(entropy),
            "uniform_entropy": float(np.log(num_actions)), "mean_entropy": float(entropy.mean()),
            "entropy_quantiles": {str(q): float(v) for q, v in zip(QUANTILES, np.percentile(entropy, QUANTILES))},
            "share_below": {str(t): float((entropy < t).mean()) for t in THRESHOLDS},
            "action_counts": np.bincount(np.array(sampling.actions_taken), minlength=num_actions).tolist(),
            "episodes_ended": len(episodes)}


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        result = measure(args.run_dir, args.steps, args.num_envs, args.seed)
    except ValueError as e:
        print(f"policy_entropy.py: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
