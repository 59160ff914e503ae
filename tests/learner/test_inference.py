
import numpy as np
import pytest

from learner.agents import AgentContext, R2D2Agent, VTraceAgent
from learner.inference import InferencePipeline
from seed.codec import EnvStepBatch
from seed.specs import EnvSpec

SPEC = EnvSpec((4,), "float32", 2)


def steps(n, done=False):
    flags = np.full(n, done)
    return EnvStepBatch(np.ones((n, 4), np.float32), np.ones(n, np.float32), flags, np.zeros(n, bool),
                        np.zeros(n, bool))


@pytest.mark.parametrize("agent_class", [VTraceAgent, R2D2Agent])
def test_policy_is_traced_once_for_every_batch_size(agent_class):
    kwargs = {"unroll_length": 4, "batch_size": 2}
    if agent_class is R2D2Agent:
        kwargs.update(burn_in=2, replay_capacity_steps=400, min_replay_sequences=1)
    agent = agent_class(AgentContext(SPEC, 1, 16, 1000), **kwargs)
    pipeline = InferencePipeline(agent, SPEC, max_slots=16, num_stacked_frames=1, reward_clipping="none")
    for n in (1, 3, 8, 5, 16):
        actions = pipeline(np.arange(n), steps(n))
        assert actions.shape == (n,) and ((0 <= actions) & (actions < 2)).all()
    assert agent.policy.experimental_get_tracing_count() == 1


def test_finished_episodes_are_reported_with_their_slot_and_evaluation_flag():
    agent = R2D2Agent(AgentContext(SPEC, 1, 8, 1000),
                      unroll_length=4, burn_in=2, replay_capacity_steps=400, num_eval_envs=1)
    pipeline = InferencePipeline(agent, SPEC, max_slots=8, num_stacked_frames=1, reward_clipping="none")
    ids = np.array([0, 5])
    pipeline(ids, steps(2))
    pipeline(ids, steps(2))
    pipeline(ids, steps(2, done=True))
    reported = sorted((e.slot, evaluation, e.raw_return, e.length) for _, evaluation, e in pipeline.finished_episodes)
    assert reported == [(0, True, 2.0, 2), (5, False, 2.0, 2)]
