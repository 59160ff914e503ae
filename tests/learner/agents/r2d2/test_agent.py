
import numpy as np
import pytest

from learner.agents import AgentContext, R2D2Agent
from learner.agents.r2d2.agent import exploration_epsilons, van_der_corput
from seed.specs import EnvSpec


def test_epsilons_follow_the_ape_x_schedule_for_any_number_of_slots_in_use():
    eps = exploration_epsilons(64, num_eval_envs=2, eval_epsilon=0.001, base=0.4, alpha=7.0)
    assert eps[:2].tolist() == pytest.approx([0.001, 0.001])
    training = eps[2:]
    assert training.max() == pytest.approx(0.4) and training.min() >= 0.4 ** 8
    # The first 16 training slots hit 16 evenly spaced points of the schedule.
    exponents = np.sort((np.log(training[:16]) / np.log(0.4) - 1) / 7)
    np.testing.assert_allclose(exponents, np.arange(16) / 16, atol=1e-6)
    assert van_der_corput(np.arange(4)).tolist() == [0.0, 0.5, 0.25, 0.75]


def test_evaluation_envs_must_leave_slots_that_train():
    spec = EnvSpec((4,), "float32", 2)
    with pytest.raises(ValueError,
                       match=r"R2D2Agent.num_eval_envs \(4\) must be below inference.max_env_slots \(4\)"):
        R2D2Agent(AgentContext(spec, 1, 4, 1000),
                  num_eval_envs=4)


def test_replay_that_cannot_fit_in_memory_is_refused_at_start():
    spec = EnvSpec((84, 84), "uint8", 6, 4)
    with pytest.raises(ValueError, match=r"needs [\d.]+ GiB but only [\d.]+ GiB is available; lower "
                                         r"R2D2Agent.replay_capacity_steps"):
        R2D2Agent(AgentContext(spec, 4, 4, 1000),
                  replay_capacity_steps=10 ** 9)


def test_a_skipped_update_leaves_the_priorities_as_they_were():
    from tests.learner.agents.test_contract import first_batch, make

    agent, pipeline = make("R2D2Agent")
    batch = first_batch(agent, pipeline, np.random.default_rng(0), reward=np.inf)
    total = agent.data.replay.priorities.tree.total
    metrics, _ = agent.update(batch)
    assert not metrics["update_applied"] and agent.data.replay.priorities.tree.total == total
    assert agent.data.replay.priorities.max_priority == 1.0


def test_the_learning_rate_schedule_spans_the_run_at_the_replay_ratio():
    agent = R2D2Agent(AgentContext(EnvSpec((4,), "float32", 2, 4), 1, 4, 1_000_000),
                      unroll_length=10, burn_in=2, batch_size=8, replay_ratio=2.0, replay_capacity_steps=400,
                      num_eval_envs=0)
    from learner.optimizers import current_learning_rate
    start = current_learning_rate(agent.optimizer)
    # 1M frames / 4 per step / 10 steps per sequence x 2 samples per insert / 8 per batch = 6250 steps
    agent.optimizer.iterations.assign(3125)
    assert current_learning_rate(agent.optimizer) == pytest.approx(start / 2)
