"""Learner and actor processes over real gRPC on loopback, real envs, real TF training."""
import json
import pathlib

import numpy as np
import tensorflow as tf

from tests import processes

CARTPOLE_STEP_BUDGET = 300_000


def run_to_budget(logdir, config, num_actors, learner_bindings, actor_bindings, timeout_s):
    learner = processes.start_learner(logdir, config, learner_bindings)
    actors = []
    try:
        address = processes.wait_for_address(logdir, learner)
        actors = processes.start_actors(logdir, config, address, num_actors, actor_bindings)
        code = learner.wait(timeout_s)
    finally:
        processes.stop([learner] + actors)
    assert code == 0, processes.learner_output(logdir)


def checkpoint_counters(logdir):
    reader = tf.train.load_checkpoint(str(pathlib.Path(logdir) / "checkpoints"))
    return (int(reader.get_tensor("environment_frames/.ATTRIBUTES/VARIABLE_VALUE")),
            int(reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")))


def test_vtrace_learns_cartpole_within_300k_steps(tmp_path):
    run_to_budget(tmp_path, "classic_vtrace.gin", 2,
                  [f"run_learner.total_environment_frames={CARTPOLE_STEP_BUDGET}", "run_learner.seed=1"],
                  ["run_actor.num_envs=4"], timeout_s=900)
    episodes = processes.read_episodes(tmp_path)
    frames = np.array([f for f, _ in episodes])
    returns = np.array([r for _, r in episodes])
    window = 20
    rolling = np.convolve(returns, np.ones(window) / window, mode="valid")  # mean of the last 20
    within_budget = frames[window - 1:] <= CARTPOLE_STEP_BUDGET
    best = rolling[within_budget].max()
    assert best >= 195, f"best mean return over 20 episodes within {CARTPOLE_STEP_BUDGET} steps: {best:.1f}"


def test_atari_smoke_trains_checkpoints_and_resumes(tmp_path):
    bindings = ["VTraceAgent.batch_size=2", "run_learner.inference_batch_size=4",
                "VTraceAgent.unroll_queue_capacity=4", "run_learner.progress_interval_s=2"]
    actor_bindings = ["run_actor.num_envs=2"]
    frames_per_update = 2 * 20 * 4
    run_to_budget(tmp_path, "atari_vtrace.gin", 2, bindings + [f"run_learner.total_environment_frames={200 * frames_per_update}"],
                  actor_bindings, timeout_s=600)
    assert checkpoint_counters(tmp_path) == (200 * frames_per_update, 200)
    records = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    trained = [r for r in records if "loss/total" in r]
    assert trained and all(np.isfinite(r[k]) for r in trained for k in ("loss/total", "loss/policy", "loss/baseline"))
    assert list((tmp_path / "summaries").iterdir()), "no TensorBoard event files"

    run_to_budget(tmp_path, "atari_vtrace.gin", 2, bindings + [f"run_learner.total_environment_frames={300 * frames_per_update}"],
                  actor_bindings, timeout_s=600)
    assert "resuming at 32000 environment frames, 200 updates" in (tmp_path / "logs" / "learner.log").read_text()
    assert checkpoint_counters(tmp_path) == (300 * frames_per_update, 300)  # optimizer step continued, not restarted


def test_vtrace_learns_cartpole_on_two_mirrored_replicas(tmp_path):
    """The same learning bar with the update split over two (logical CPU) replicas."""
    run_to_budget(tmp_path, "classic_vtrace.gin", 2,
                  [f"run_learner.total_environment_frames={CARTPOLE_STEP_BUDGET}", "run_learner.seed=1",
                   "create_strategy.kind='mirrored'", "create_strategy.cpu_replicas=2"],
                  ["run_actor.num_envs=4"], timeout_s=900)
    assert "training on 2 replicas (MirroredStrategy)" in (tmp_path / "logs" / "learner.log").read_text()
    episodes = processes.read_episodes(tmp_path)
    frames = np.array([f for f, _ in episodes])
    returns = np.array([r for _, r in episodes])
    rolling = np.convolve(returns, np.ones(20) / 20, mode="valid")
    best = rolling[frames[19:] <= CARTPOLE_STEP_BUDGET].max()
    assert best >= 195, f"best mean return over 20 episodes within {CARTPOLE_STEP_BUDGET} steps: {best:.1f}"
