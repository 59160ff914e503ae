import numpy as np
import pytest

from seed import codec, seed_pb2
from seed.specs import EnvSpec

ATARI = EnvSpec((84, 84), "uint8", 6, 4)


def test_steps_round_trip():
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 255, (3, 84, 84), dtype=np.uint8)
    rewards = np.array([0.0, -1.0, 21.0], np.float32)
    terminated = np.array([False, True, False])
    truncated = np.array([False, False, True])
    wire = codec.encode_steps(obs, rewards, terminated, truncated).SerializeToString()
    message = seed_pb2.ActorMessage.FromString(wire)
    got = codec.decode_steps(message.steps, ATARI, 3)
    np.testing.assert_array_equal(got.observations, obs)
    np.testing.assert_array_equal(got.rewards, rewards)
    np.testing.assert_array_equal(got.terminated, terminated)
    np.testing.assert_array_equal(got.truncated, truncated)


def test_actions_round_trip():
    actions = np.array([5, 0, 3, 1], np.int32)
    message = codec.encode_actions(actions)
    np.testing.assert_array_equal(codec.decode_actions(message.actions, 4), actions)


def test_wrong_observation_size_names_the_field():
    message = codec.encode_steps(np.zeros((2, 84, 80), np.uint8), np.zeros(2), np.zeros(2), np.zeros(2))
    with pytest.raises(codec.ProtocolError, match="observations: got 13440 bytes, expected 14112"):
        codec.decode_steps(message.steps, ATARI, 2)


def test_wrong_number_of_envs_is_rejected():
    message = codec.encode_steps(np.zeros((2, 84, 84), np.uint8), np.zeros(2), np.zeros(2), np.zeros(2))
    with pytest.raises(codec.ProtocolError, match="observations"):
        codec.decode_steps(message.steps, ATARI, 3)


def test_non_finite_rewards_are_rejected():
    message = codec.encode_steps(np.zeros((2, 84, 84), np.uint8), [0.0, np.nan], np.zeros(2), np.zeros(2))
    with pytest.raises(codec.ProtocolError, match="non-finite"):
        codec.decode_steps(message.steps, ATARI, 2)


def test_spec_mismatch_says_what_differs():
    hello = codec.make_hello("a", 4, EnvSpec((4,), "float32", 2)).hello
    problem = codec.spec_mismatch(hello, ATARI)
    assert "observation shape (4,) != learner's (84, 84)" in problem
    assert "2 actions != learner's 6" in problem
    assert codec.spec_mismatch(codec.make_hello("a", 4, ATARI).hello, ATARI) == ""
