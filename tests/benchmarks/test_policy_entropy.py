"""benchmarks/policy_entropy.py: a checkpoint's policy played on its own env (CartPole here), each
step's entropy and sampled action, from policies whose spread is known."""
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from learner.networks import ActorCriticNetwork
from seed.gin_setup import CONFIG_DIR
from tests.processes import REPO_ROOT, child_env


def _run_dir(tmp_path, policy_bias, config="classic_vtrace.gin"):
    """A run directory whose checkpoint's policy ignores the observation: zero policy weights, logits =
    `policy_bias`."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    shutil.copy(CONFIG_DIR / config, run / "learner_operative_config.gin")
    network = ActorCriticNetwork(2, (4, 1), "float32", torso="mlp")
    network(tf.zeros([1], tf.int32), _env_output(), network.initial_state(1))
    kernel, bias = network._policy.weights
    kernel.assign(tf.zeros_like(kernel))
    bias.assign(tf.constant(policy_bias, tf.float32))
    tf.train.Checkpoint(agent=network).save(str(run / "checkpoints" / "ckpt"))
    return run


def _env_output():
    from learner.networks import EnvOutput
    return EnvOutput(tf.zeros([1]), tf.zeros([1], tf.bool), tf.zeros([1, 4, 1]))


def _measure(run, *flags):
    result = subprocess.run([sys.executable, "benchmarks/policy_entropy.py", str(run), "--steps", "100",
                             "--num_envs", "2", *flags], capture_output=True, text=True, cwd=REPO_ROOT,
                            env=child_env(), timeout=300)
    return result


@pytest.mark.parametrize("bias, share_of_action_1", [
    ([0.0, 0.0], (0.4, 0.6)),     # uniform: ln 2 nats, actions about even
    ([0.0, 12.0], (0.99, 1.0)),   # p(0) = 6e-6: about 8e-5 nats, action 1 nearly always
])
def test_a_known_policy_gives_its_entropy_at_every_step_and_its_actions(tmp_path, bias, share_of_action_1):
    p = np.exp(bias) / np.exp(bias).sum()
    entropy = -(p * np.log(p)).sum()
    result = _measure(_run_dir(tmp_path, bias), "--json", str(tmp_path / "out.json"))
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out == json.loads((tmp_path / "out.json").read_text())
    assert out["agent"] == "VTraceAgent" and out["env_steps"] == 200 and sum(out["action_counts"]) == 200
    assert out["uniform_entropy"] == pytest.approx(np.log(2))
    for value in (out["mean_entropy"], *out["entropy_quantiles"].values()):
        assert value == pytest.approx(entropy, rel=1e-3)
    low, high = share_of_action_1
    assert low <= out["action_counts"][1] / 200 <= high
    assert out["episodes_ended"] >= 1  # CartPole ends within 200 steps under either policy


def test_a_run_without_a_checkpoint_or_with_bad_flags_is_refused_in_one_line(tmp_path):
    run = _run_dir(tmp_path, [0.0, 0.0])
    shutil.rmtree(run / "checkpoints")
    result = _measure(run)
    assert result.returncode == 2 and "policy_entropy.py: error: no checkpoint in" in result.stderr
    result = _measure(tmp_path / "missing")
    assert result.returncode == 2 and "no operative config in" in result.stderr
    result = _measure(run, "--steps", "0")
    assert result.returncode == 2 and "--steps must be at least 1, got 0" in result.stderr
