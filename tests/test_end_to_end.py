"""Learner and actor processes over real gRPC on loopback, real envs, real TF training."""
import json
import pathlib
import subprocess
import sys

import numpy as np
import tensorflow as tf

from tests import processes

CARTPOLE_STEP_BUDGET = 300_000


def run_to_budget(logdir, config, num_actors, learner_bindings, actor_bindings, timeout_s, learner_flags=()):
    learner = processes.start_learner(logdir, config, learner_bindings, flags=learner_flags)
    actors = []
    try:
        address = processes.wait_for_address(logdir, learner)
        actors = processes.start_actors(logdir, config, address, num_actors, actor_bindings)
        code = learner.wait(timeout_s)
    finally:
        processes.stop([learner] + actors)
    assert code == 0, processes.learner_output(logdir)


def best_mean_return(logdir, window, evaluation=False, budget=CARTPOLE_STEP_BUDGET):
    """The best mean raw return over `window` consecutive episodes, the last of which ended
    within `budget` env steps; -inf before there are `window` of them."""
    episodes = processes.read_episodes(logdir, evaluation)
    frames = np.array([f for f, _ in episodes])
    returns = np.array([r for _, r in episodes])
    if len(returns) < window:
        return -np.inf
    rolling = np.convolve(returns, np.ones(window) / window, mode="valid")
    within_budget = rolling[frames[window - 1:] <= budget]
    return within_budget.max() if within_budget.size else -np.inf


def train_until_solved(logdir, config, learner_bindings, actor_bindings, window, evaluation=False,
                       budget=CARTPOLE_STEP_BUDGET, solved_at=195.0, timeout_s=900):
    """Trains CartPole on 2 actors with a budget of `budget` env steps, and stops the run
    (SIGTERM, as Ctrl-C would) as soon as the best mean return over `window` episodes within it
    reaches `solved_at`, instead of training out the budget. Returns that best mean return."""
    learner_bindings = list(learner_bindings) + [f"training.total_environment_frames={budget}",
                                                 "reporting.progress_interval_s=1"]  # episodes.csv is flushed then
    learner = processes.start_learner(logdir, config, learner_bindings)
    processes_started = [learner]
    try:
        address = processes.wait_for_address(logdir, learner)
        processes_started += processes.start_actors(logdir, config, address, 2, actor_bindings)
        processes.wait_until(lambda: learner.poll() is not None  # budget spent, or an error
                             or best_mean_return(logdir, window, evaluation, budget) >= solved_at,
                             timeout_s, what=f"a mean return of {solved_at} or the end of the run", poll_s=1.0)
    finally:
        codes = processes.stop(processes_started)
    assert codes[0] == 0, processes.learner_output(logdir)
    return best_mean_return(logdir, window, evaluation, budget)


def checkpoint_counters(logdir):
    reader = tf.train.load_checkpoint(str(pathlib.Path(logdir) / "checkpoints"))
    return (int(reader.get_tensor("environment_frames/.ATTRIBUTES/VARIABLE_VALUE")),
            int(reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")))


def test_vtrace_learns_cartpole_within_300k_steps(tmp_path):
    best = train_until_solved(tmp_path, "classic_vtrace.gin", ["training.seed=1"], ["run_actor.num_envs=4"],
                              window=20)
    assert best >= 195, f"best mean return over 20 episodes within {CARTPOLE_STEP_BUDGET} steps: {best:.1f}"


PPO_CARTPOLE_STEP_BUDGET = 150_000  # seed 1 reached a mean of 259 over 100 episodes by 55k steps (2 actors x 4 envs)


def test_ppo_learns_cartpole_within_150k_steps(tmp_path):
    best = train_until_solved(tmp_path, "classic_ppo.gin", ["training.seed=1"], ["run_actor.num_envs=4"],
                              window=20, budget=PPO_CARTPOLE_STEP_BUDGET)
    assert best >= 195, f"best mean return over 20 episodes within {PPO_CARTPOLE_STEP_BUDGET} steps: {best:.1f}"


SAC_PENDULUM_STEP_BUDGET = 15_000  # seed 1, 1 actor x 2 envs: greedy mean -109 over 10 episodes after 16k steps


def test_sac_learns_pendulum_within_15k_steps(tmp_path):
    run_to_budget(tmp_path, "classic_sac.gin", 1, ["training.seed=1",
                                                   f"training.total_environment_frames={SAC_PENDULUM_STEP_BUDGET}"],
                  ["run_actor.num_envs=2"], timeout_s=600)
    result = subprocess.run([sys.executable, "-m", "learner.evaluate", "--logdir", str(tmp_path), "--episodes", "10",
                             "--num_envs", "2", "--json", str(tmp_path / "eval.json")],
                            capture_output=True, text=True, cwd=processes.REPO_ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    mean = json.loads((tmp_path / "eval.json").read_text())["return_mean"]
    assert mean >= -250, f"greedy mean return over 10 episodes after {SAC_PENDULUM_STEP_BUDGET} steps: {mean:.1f}"


def test_atari_smoke_trains_checkpoints_and_resumes(tmp_path):
    bindings = ["VTraceAgent.batch_size=2", "VTraceAgent.minibatches=2", "inference.batch_size=4",
                "VTraceAgent.unroll_queue_capacity=4", "reporting.progress_interval_s=2"]
    actor_bindings = ["run_actor.num_envs=2"]
    frames_per_update = 2 * 20 * 4
    steps_per_update = 2 * 2  # atari_vtrace.gin's 2 epochs of 2 minibatches
    run_to_budget(tmp_path, "atari_vtrace.gin", 2,
                  bindings + [f"training.total_environment_frames={200 * frames_per_update}"],
                  actor_bindings, timeout_s=600)
    assert checkpoint_counters(tmp_path) == (200 * frames_per_update, 200 * steps_per_update)
    records = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    trained = [r for r in records if "loss/total" in r]
    assert trained and all(np.isfinite(r[k]) for r in trained for k in ("loss/total", "loss/policy", "loss/baseline"))
    assert any(r.get("training/update_ms", 0) > 0 for r in trained)
    assert all(0 <= r["training/batch_wait_share"] <= 1 for r in records if "training/batch_wait_share" in r)
    assert list((tmp_path / "summaries").iterdir()), "no TensorBoard event files"

    # The resumed run makes the same gradient steps with the minibatch loop in one compiled call, a change
    # of settings it is told to accept.
    run_to_budget(tmp_path, "atari_vtrace.gin", 2,
                  bindings + [f"training.total_environment_frames={300 * frames_per_update}",
                              "VTraceTrainer.minibatch_loop_in_graph=True"],
                  actor_bindings, timeout_s=600, learner_flags=["--resume_with_changes"])
    assert f"resuming at 32000 environment frames, {200 * steps_per_update} gradient steps" in (
        tmp_path / "logs" / "learner.log").read_text()
    assert checkpoint_counters(tmp_path) == (300 * frames_per_update,
                                             300 * steps_per_update)  # optimizer step continued, not restarted


def test_vtrace_learns_cartpole_on_two_mirrored_replicas(tmp_path):
    """The same learning bar with the update split over two (logical CPU) replicas."""
    best = train_until_solved(tmp_path, "classic_vtrace.gin",
                              ["training.seed=1", "create_strategy.kind='mirrored'",
                               "create_strategy.cpu_replicas=2"],
                              ["run_actor.num_envs=4"], window=20)
    assert "training on 2 replicas (MirroredStrategy)" in (tmp_path / "logs" / "learner.log").read_text()
    assert best >= 195, f"best mean return over 20 episodes within {CARTPOLE_STEP_BUDGET} steps: {best:.1f}"


def test_vtrace_with_replay_counts_fresh_frames_reports_its_mix_and_resumes(tmp_path):
    """Half of each batch replayed, one unroll from each replay source (elite's candidates prepared on
    its own thread): the frame budget counts only fresh unrolls' frames, those that filled the replay
    before the first update included, and the progress record reports every source."""
    bindings = ["VTraceAgent.sources={'queue': 0.5, 'uniform': 0.125, 'prioritised': 0.125, 'elite': 0.125, "
                "'attentive': 0.125}", "VTraceAgent.min_replay_unrolls=8", "reporting.progress_interval_s=1"]
    # CartPole: one frame per step, batch 8 x 20. The first update consumes 2 x 4 unrolls of fill and
    # its own 4 fresh ones; every later one 4.
    first, later = 12 * 20, 4 * 20
    budget = first + 99 * later
    run_to_budget(tmp_path, "classic_vtrace.gin", 2, bindings + [f"training.total_environment_frames={budget}"],
                  ["run_actor.num_envs=4"], timeout_s=300)
    assert checkpoint_counters(tmp_path) == (budget, 100)
    records = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    mixed = [r for r in records if "data/share_uniform" in r and "loss/total" in r]  # after an update
    kinds = ("uniform", "prioritised", "elite", "attentive")
    assert mixed and all(r["data/share_queue"] == 0.5 and r["data/replay_size"] >= 8 for r in mixed)
    assert all(r[f"data/share_{k}"] == 0.125 and r[f"data/{k}_age_updates"] >= 0 and r[f"data/{k}_rho"] > 0
               and r[f"data/{k}_kl"] >= -1e-6 and 0 <= r[f"data/{k}_clip_fraction"] <= 1 for r in mixed for k in kinds)
    assert all(r["data/elite_distance"] >= 0 and r["data/attentive_distance"] >= 0
               and 0 < r["data/prioritised_loss_weight"] <= 1 for r in mixed)

    run_to_budget(tmp_path, "classic_vtrace.gin", 2,
                  bindings + [f"training.total_environment_frames={budget + 800}"],
                  ["run_actor.num_envs=4"], timeout_s=300)
    # The replay is not checkpointed: the resumed run fills it again before its first update.
    assert checkpoint_counters(tmp_path) == (budget + first + 7 * later, 108)
    # Frames stepped go on across the resume (they restarted at 0 before), so the curve continues.
    stepped = [int(line.split(",")[0]) for line in (tmp_path / "episodes.csv").read_text().splitlines()[1:]]
    assert stepped == sorted(stepped) and stepped[-1] > budget


def test_a_batch_that_cannot_fit_the_unroll_queue_is_refused_at_start(tmp_path):
    learner = processes.start_learner(tmp_path, "classic_vtrace.gin", ["VTraceAgent.batch_size=40",
                                                                       "VTraceAgent.unroll_queue_capacity=32"])
    assert learner.wait(120) != 0
    assert ("each batch takes 40 fresh unrolls but unroll_queue_capacity is 32; raise unroll_queue_capacity"
            in processes.learner_output(tmp_path))
