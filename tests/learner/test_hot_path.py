"""The per-step hot path does no Python work per env: counted, not timed."""
import sys

import numpy as np
import pytest

from learner.agents import AgentContext, R2D2Agent, VTraceAgent
from learner.inference import InferencePipeline
from seed import codec
from seed.specs import EnvSpec

SPEC = EnvSpec((84, 84), "uint8", 6, 4)


def python_calls(fn) -> int:
    calls = 0

    def profiler(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profiler)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("agent_class", [VTraceAgent, R2D2Agent])
def test_python_calls_per_batch_do_not_grow_with_the_number_of_envs(agent_class):
    kwargs = {"unroll_length": 1000, "batch_size": 2}  # no unroll completes while counting
    if agent_class is R2D2Agent:
        kwargs.update(burn_in=2, replay_capacity_steps=20_000, num_eval_envs=0)
    agent = agent_class(AgentContext(SPEC, 4, 128, 10 ** 6), **kwargs)
    pipeline = InferencePipeline(agent, SPEC, max_slots=128, num_stacked_frames=4, reward_clipping="abs_one")
    rng = np.random.default_rng(0)

    def one_batch(n):
        message = codec.encode_steps(rng.integers(0, 255, (n, 84, 84), dtype=np.uint8), np.zeros(n),
                                     np.zeros(n), np.zeros(n))
        return lambda: pipeline(np.arange(n), codec.decode_steps(message.steps, SPEC, n))

    for n in (4, 64):  # warm up: trace the policy, allocate
        one_batch(n)()
    small, large = python_calls(one_batch(4)), python_calls(one_batch(64))
    assert large <= small + 5, (small, large)  # 16x the envs, the same Python work
