"""The agent contract (learner/agents/base.py), checked on every registered agent the way the
learner drives it: acting through the inference pipeline, batches and updates as the training
loop takes them, a non-finite update skipped, a checkpoint round trip, one policy trace."""
import threading
import time

import numpy as np
import pytest

from learner.agents import AGENTS, Agent, AgentContext
from learner.checkpoints import Checkpointer
from learner.inference import InferencePipeline
from seed.codec import EnvStepBatch
from seed.specs import ActionSpec, EnvSpec

SPEC = EnvSpec((4,), "float32", 3)
CONTINUOUS = EnvSpec((4,), "float32", 0, action=ActionSpec.continuous([-2.0, 0.0], [2.0, 1.0]))

# Small settings per agent so that a batch fills after a few dozen steps. A new agent adds its own.
SMALL = {
    "VTraceAgent": {"unroll_length": 4, "batch_size": 2, "unroll_queue_capacity": 4},
    "R2D2Agent": {"unroll_length": 4, "burn_in": 2, "batch_size": 2, "replay_capacity_steps": 400,
                  "min_replay_sequences": 2, "num_eval_envs": 0},
    "FixedActionAgent": {},
    "SACAgent": {"batch_size": 4, "replay_capacity": 64, "min_replay_size": 1, "hidden_sizes": (16, 16)},
    "PPOAgent": {"unroll_length": 4, "batch_size": 2, "unroll_queue_capacity": 4, "epochs": 2, "minibatches": 2},
}
TRAINING = sorted(name for name in AGENTS if name != "FixedActionAgent")


CONTINUOUS_AGENTS = sorted(name for name, cls in AGENTS.items() if "continuous" in cls.action_kinds)


def make(name, spec=None, **settings):
    """The agent with SMALL's settings (and `settings` over them) and an inference pipeline to drive it."""
    assert name in SMALL, f"add small test settings for {name} to SMALL"
    spec = spec or (SPEC if "discrete" in AGENTS[name].action_kinds else CONTINUOUS)
    agent = AGENTS[name](AgentContext(spec, 1, 8, 10 ** 6), **{**SMALL[name], **settings})
    return agent, InferencePipeline(agent, spec, max_slots=8, num_stacked_frames=1, reward_clipping="none")


def play(pipeline, rng, steps, num_envs=4, reward=None):
    """`steps` env steps on `num_envs` slots, episodes ending at random; returns the last actions."""
    for _ in range(steps):
        done = rng.random(num_envs) < 0.1
        rewards = rng.normal(size=num_envs).astype(np.float32) if reward is None else np.full(num_envs, reward,
                                                                                               np.float32)
        actions = pipeline(np.arange(num_envs), EnvStepBatch(rng.normal(size=(num_envs, 4)).astype(np.float32),
                                                             rewards, done, np.zeros(num_envs, bool),
                                                             np.zeros(num_envs, bool)))
    return actions


def first_batch(agent, pipeline, rng, reward=None):
    """Plays until the agent's data source hands out a batch (bounded)."""
    for _ in range(50):
        play(pipeline, rng, 8, reward=reward)
        batch = agent.data.next_batch(timeout_s=0.2)  # it waits for data: give up on this round
        if batch is not None:
            return batch
    raise AssertionError("no batch after 400 steps on 4 envs")


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_agent_declares_the_contract_and_acts_on_a_batch(name):
    agent, pipeline = make(name)
    assert isinstance(agent, Agent)
    assert isinstance(AGENTS[name].supports_strategy, bool)
    actions = play(pipeline, np.random.default_rng(0), 3)
    if "discrete" in AGENTS[name].action_kinds:
        assert actions.shape == (4,) and actions.dtype == np.int32 and ((0 <= actions) & (actions < 3)).all()
    else:
        assert actions.shape == (4, 2) and actions.dtype == np.float32
    assert isinstance(agent.data.metrics(), dict) and isinstance(agent.data.describe(), str)
    agent.release(np.arange(2))
    policy = AGENTS[name].evaluation_policy(SPEC if "discrete" in AGENTS[name].action_kinds else CONTINUOUS, 1)
    assert (policy is None) == (agent.optimizer is None)  # what has weights can be evaluated


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_closing_an_agent_s_data_source_wakes_a_waiting_training_thread_for_good(name):
    agent, _ = make(name)
    batches = []
    waiting = threading.Thread(target=lambda: batches.append(agent.data.next_batch()), daemon=True)
    waiting.start()  # no data: it waits
    agent.data.close()
    waiting.join(10)
    assert not waiting.is_alive() and batches == [None]
    started = time.monotonic()
    assert agent.data.next_batch(timeout_s=30) is None and time.monotonic() - started < 5  # closed: no wait


@pytest.mark.parametrize("name", TRAINING)
def test_every_training_agent_trains_a_step_and_counts_new_frames(name):
    agent, pipeline = make(name)
    before = [v.numpy().copy() for v in agent.trackables()["agent"].trainable_variables]
    metrics, new_frames = agent.update(first_batch(agent, pipeline, np.random.default_rng(1)))
    assert metrics.pop("update_applied") and all(np.isfinite(v) for v in metrics.values())
    assert new_frames > 0 and new_frames % SPEC.frames_per_step == 0
    after = agent.trackables()["agent"].trainable_variables
    assert any(not np.array_equal(b, a.numpy()) for b, a in zip(before, after))


@pytest.mark.parametrize("name", TRAINING)
def test_every_training_agent_skips_a_non_finite_update_and_keeps_its_weights(name):
    agent, pipeline = make(name)
    batch = first_batch(agent, pipeline, np.random.default_rng(2), reward=np.inf)
    before = [v.numpy().copy() for v in agent.trackables()["agent"].trainable_variables]
    metrics, new_frames = agent.update(batch)
    assert not metrics["update_applied"] and new_frames > 0  # the frames were collected all the same
    for b, a in zip(before, agent.trackables()["agent"].trainable_variables):
        np.testing.assert_array_equal(b, a.numpy())


@pytest.mark.parametrize("name", TRAINING)
def test_every_training_agent_round_trips_a_checkpoint(name, tmp_path):
    agent, pipeline = make(name)
    agent.update(first_batch(agent, pipeline, np.random.default_rng(3)))
    Checkpointer(str(tmp_path), **agent.trackables()).save()
    fresh, _ = make(name)
    assert Checkpointer(str(tmp_path), **fresh.trackables()).restore_latest()
    for a, b in zip(agent.trackables()["agent"].trainable_variables, fresh.trackables()["agent"].trainable_variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(agent.optimizer.iterations.numpy()) == int(fresh.optimizer.iterations.numpy()) > 0


@pytest.mark.parametrize("name", TRAINING)
def test_every_training_agent_traces_its_policy_once_for_every_batch_size(name):
    agent, pipeline = make(name)
    rng = np.random.default_rng(4)
    for n in (1, 3, 8, 5):
        play(pipeline, rng, 1, num_envs=n)
    assert agent.policy.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("name", CONTINUOUS_AGENTS)
def test_every_continuous_agent_acts_within_the_bounds_and_trains(name):
    _, pipeline = make(name, spec=CONTINUOUS)
    actions = play(pipeline, np.random.default_rng(5), 3)
    assert actions.shape == (4, 2) and actions.dtype == np.float32
    assert ((actions >= [-2.0, 0.0]) & (actions <= [2.0, 1.0])).all()
    agent, pipeline = make(name, spec=CONTINUOUS)
    metrics, new_frames = agent.update(first_batch(agent, pipeline, np.random.default_rng(6)))
    assert metrics["update_applied"] and new_frames > 0
    policy = AGENTS[name].evaluation_policy(CONTINUOUS, 1)
    outputs, _ = policy.network(pipeline.slots.prev_action[:4], *evaluation_inputs(4))
    greedy = policy.actions(outputs)
    assert greedy.shape == (4, 2) and ((greedy >= [-2.0, 0.0]) & (greedy <= [2.0, 1.0])).all()


def evaluation_inputs(n):
    from learner.networks import EnvOutput
    return EnvOutput(np.zeros(n, np.float32), np.ones(n, bool), np.zeros((n, 4, 1), np.float32)), np.zeros((n, 0),
                                                                                                      np.float32)
