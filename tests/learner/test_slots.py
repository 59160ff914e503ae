import numpy as np

from learner.slots import SlotTable
from seed.codec import EnvStepBatch
from seed.specs import TERMINATED_LIFE_LOST


def steps(frames, rewards=None, terminated=None, truncated=None):
    """`terminated` as codes (0, 1, or TERMINATED_LIFE_LOST) or bools."""
    n = len(frames)
    zeros = np.zeros(n, bool)
    return EnvStepBatch.from_env(np.asarray(frames, np.uint8),
                                 np.asarray(rewards if rewards is not None else np.zeros(n), np.float32),
                                 np.asarray(terminated if terminated is not None else zeros, np.uint8),
                                 truncated if truncated is not None else zeros)


def frame(value):
    return np.full((2, 2), value, np.uint8)


def test_frames_stack_per_slot_and_restart_after_an_episode_end():
    table = SlotTable(4, (2, 2), "uint8", 3, state_size=2, reward_clipping="none")
    ids = np.array([2])
    inputs, _ = table.observe(ids, steps([frame(1)]))
    assert inputs.first[0]
    np.testing.assert_array_equal(inputs.observation[0, 0, 0], [0, 0, 1])
    table.act(ids, np.array([1]), np.ones((1, 2)))
    inputs, _ = table.observe(ids, steps([frame(2)]))
    inputs, _ = table.observe(ids, steps([frame(3)]))
    np.testing.assert_array_equal(inputs.observation[0, 1, 1], [1, 2, 3])
    table.act(ids, np.array([4]), np.full((1, 2), 7.0))
    # Frame 4 is the episode's final observation; frame 5 the reset observation.
    inputs, _ = table.observe(ids, steps([frame(4)], terminated=np.array([True])))
    assert not inputs.first[0] and inputs.prev_action[0] == 4
    np.testing.assert_array_equal(inputs.core_state[0], [7.0, 7.0])
    np.testing.assert_array_equal(inputs.observation[0, 0, 0], [2, 3, 4])
    table.act(ids, np.array([5]), np.full((1, 2), 9.0))
    inputs, _ = table.observe(ids, steps([frame(5)]))
    assert inputs.first[0]
    np.testing.assert_array_equal(inputs.observation[0, 0, 0], [0, 0, 5])
    # The network zeroes state and previous action at first steps; the table hands them over as they are.
    assert table.frames[0].sum() == 0  # other slots untouched


def test_episode_returns_and_lengths_are_reported_at_the_end():
    table = SlotTable(2, (2, 2), "uint8", 1, state_size=0, reward_clipping="abs_one")
    ids = np.array([0, 1])
    table.observe(ids, steps([frame(0), frame(0)]))
    table.observe(ids, steps([frame(0), frame(0)], rewards=[3.0, -2.0]))
    _, finished = table.observe(ids, steps([frame(0), frame(0)], rewards=[1.0, 0.5],
                                           truncated=np.array([True, False])))
    assert len(finished) == 1
    assert finished[0].raw_return == 4.0 and finished[0].clipped_return == 2.0 and finished[0].length == 2
    _, finished = table.observe(ids, steps([frame(0), frame(0)], terminated=np.array([False, True])))
    assert finished[0].raw_return == -1.5 and finished[0].length == 3


def test_reset_slot_starts_a_fresh_episode():
    table = SlotTable(2, (2, 2), "uint8", 2, state_size=2, reward_clipping="none")
    ids = np.array([1])
    table.observe(ids, steps([frame(1)]))
    table.act(ids, np.array([3]), np.ones((1, 2)))
    table.reset(ids)
    inputs, _ = table.observe(ids, steps([frame(2)]))
    assert inputs.first[0] and inputs.prev_action[0] == 0 and not inputs.core_state.any()
    np.testing.assert_array_equal(inputs.observation[0, 0, 0], [0, 2])


def test_a_lost_life_restarts_learning_but_the_game_and_its_return_go_on():
    table = SlotTable(1, (2, 2), "uint8", 2, state_size=0, reward_clipping="abs_one")
    ids = np.array([0])
    table.observe(ids, steps([frame(1)]))
    table.observe(ids, steps([frame(2)], rewards=[4.0]))
    _, finished = table.observe(ids, steps([frame(3)], terminated=[TERMINATED_LIFE_LOST]))
    assert finished == []  # the game goes on
    inputs, finished = table.observe(ids, steps([frame(4)], rewards=[1.0]))  # the step after: a reset step
    assert inputs.first[0] and finished == []
    np.testing.assert_array_equal(inputs.observation[0, 0, 0], [0, 4])  # the frame stack starts afresh
    _, finished = table.observe(ids, steps([frame(5)], rewards=[2.0], terminated=[1]))  # game over
    assert [(e.raw_return, e.clipped_return, e.length) for e in finished] == [(7.0, 3.0, 4)]
    inputs, _ = table.observe(ids, steps([frame(6)], rewards=[9.0]))  # a new game's reset step: its reward is no one's
    _, finished = table.observe(ids, steps([frame(7)], truncated=[True]))
    assert inputs.first[0] and [(e.raw_return, e.length) for e in finished] == [(0.0, 1)]


def test_a_lost_life_cut_off_by_the_frame_limit_ends_the_game():
    table = SlotTable(1, (2, 2), "uint8", 1, state_size=0, reward_clipping="none")
    ids = np.array([0])
    table.observe(ids, steps([frame(1)]))
    _, finished = table.observe(ids, steps([frame(2)], rewards=[2.0], terminated=[TERMINATED_LIFE_LOST],
                                           truncated=[True]))
    assert [e.raw_return for e in finished] == [2.0]
    table.observe(ids, steps([frame(3)], rewards=[5.0]))  # the next game's reset step
    _, finished = table.observe(ids, steps([frame(4)], rewards=[1.0], terminated=[1]))
    assert [e.raw_return for e in finished] == [1.0]


def test_a_non_finite_reward_spoils_only_its_own_episode_return():
    # The codec refuses non-finite rewards from actors; tests of skipped updates feed them directly.
    table = SlotTable(1, (2, 2), "uint8", 1, state_size=0, reward_clipping="none")
    ids = np.array([0])
    table.observe(ids, steps([frame(1)]))
    _, finished = table.observe(ids, steps([frame(2)], rewards=[np.inf], terminated=[1]))
    assert np.isinf(finished[0].raw_return)
    table.observe(ids, steps([frame(3)], rewards=[5.0]))  # the next game's reset step
    _, finished = table.observe(ids, steps([frame(4)], rewards=[1.0], terminated=[1]))
    assert [(e.raw_return, e.clipped_return) for e in finished] == [(1.0, 1.0)]
