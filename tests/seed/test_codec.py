
import numpy as np
import pytest

from seed import codec, seed_pb2
from seed.specs import ActionSpec, EnvSpec

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


ARM = EnvSpec((11,), "float64", 0, action=ActionSpec.continuous(-np.ones((2, 3)), np.ones((2, 3))))


def test_continuous_actions_round_trip_as_float32_of_their_shape():
    actions = np.random.default_rng(0).uniform(-1, 1, (4, 2, 3))
    wire = seed_pb2.LearnerMessage.FromString(codec.encode_actions(actions, 1, ARM.action).SerializeToString())
    decoded = codec.decode_actions(wire.actions, 4, ARM.action)
    assert decoded.dtype == np.float32 and decoded.shape == (4, 2, 3)
    np.testing.assert_allclose(decoded, actions, rtol=1e-6)
    with pytest.raises(codec.ProtocolError, match=r"actions: got 96 bytes, expected 72 \(3x2x3 float32\)"):
        codec.decode_actions(wire.actions, 3, ARM.action)


def test_a_lost_life_travels_as_its_own_terminated_code_and_unknown_codes_are_refused():
    obs, rewards = np.zeros((3, 84, 84), np.uint8), np.zeros(3, np.float32)
    codes = np.array([0, 1, codec.TERMINATED_LIFE_LOST], np.uint8)
    got = codec.decode_steps(codec.encode_steps(obs, rewards, codes, np.zeros(3)).steps, ATARI, 3)
    np.testing.assert_array_equal(got.terminated, [False, True, True])  # both are ends for learning
    np.testing.assert_array_equal(got.life_lost, [False, False, True])
    message = codec.encode_steps(obs, rewards, np.array([0, 3, 0], np.uint8), np.zeros(3))
    with pytest.raises(codec.ProtocolError, match="terminated: code 3, expected 0, 1 or 2"):
        codec.decode_steps(message.steps, ATARI, 3)
