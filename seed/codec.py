"""numpy <-> protobuf for the actor/learner stream.

All arrays travel as raw little-endian bytes whose shapes follow from the
Hello, so decoding is `np.frombuffer` over the message's bytes (no copy) after
checking the byte counts. Every malformed input raises `ProtocolError` with a
message that names the field and what was expected.
"""
import math
from typing import NamedTuple

import numpy as np

from seed import seed_pb2
from seed.specs import DISCRETE_ACTION_DTYPE, TERMINATED_LIFE_LOST, ActionSpec, EnvSpec

ACTION_DTYPE = DISCRETE_ACTION_DTYPE  # continuous actions are float32 (ActionSpec.wire_dtype)
REWARD_DTYPE = np.dtype("<f4")
FLAG_DTYPE = np.dtype("u1")


class ProtocolError(ValueError):
    """A message that does not follow the protocol."""


class EnvStepBatch(NamedTuple):
    """One actor's N envs at one step. Arrays are read-only views."""
    observations: np.ndarray  # [N, *observation_shape]
    rewards: np.ndarray  # [N] float32, raw
    terminated: np.ndarray  # [N] bool: an end for learning, a lost life included
    truncated: np.ndarray  # [N] bool
    life_lost: np.ndarray  # [N] bool: terminated by a lost life, the game goes on

    @classmethod
    def from_env(cls, observations, rewards, terminated, truncated) -> "EnvStepBatch":
        """From `ActorEnvs.step`'s arrays, whose `terminated` holds the wire's codes (0, 1, TERMINATED_LIFE_LOST)."""
        codes = np.asarray(terminated)
        return cls(observations, rewards, codes != 0, np.asarray(truncated, bool), codes == TERMINATED_LIFE_LOST)


def encode_steps(observations: np.ndarray, rewards: np.ndarray, terminated: np.ndarray,
                 truncated: np.ndarray, env_group: int = 0) -> seed_pb2.ActorMessage:
    # The sub-message goes in as a dict: a message object passed to a constructor is copied
    # once more (upb), 12-22 us for 16-32 Pong frames against 2-4 us, and 100+ us where malloc
    # maps fresh pages for the copy.
    return seed_pb2.ActorMessage(steps={
        "observations": np.ascontiguousarray(observations).tobytes(),
        "rewards": np.asarray(rewards, REWARD_DTYPE).tobytes(),
        "terminated": np.asarray(terminated, FLAG_DTYPE).tobytes(),
        "truncated": np.asarray(truncated, FLAG_DTYPE).tobytes(),
        "env_group": env_group})


def _field(data: bytes, dtype: np.dtype, shape, name: str) -> np.ndarray:
    expected = math.prod(shape) * dtype.itemsize
    if len(data) != expected:
        raise ProtocolError(f"{name}: got {len(data)} bytes, expected {expected} "
                            f"({'x'.join(map(str, shape))} {dtype.name})")
    return np.frombuffer(data, dtype).reshape(shape)


def decode_steps(steps: seed_pb2.EnvSteps, spec: EnvSpec, num_envs: int) -> EnvStepBatch:
    observations = _field(steps.observations, np.dtype(spec.observation_dtype),
                          (num_envs, *spec.observation_shape), "observations")
    rewards = _field(steps.rewards, REWARD_DTYPE, (num_envs,), "rewards")
    if not np.isfinite(rewards).all():
        raise ProtocolError("rewards: non-finite value (NaN or inf) from the environment")
    terminated = _field(steps.terminated, FLAG_DTYPE, (num_envs,), "terminated")
    if terminated.max(initial=0) > TERMINATED_LIFE_LOST:
        raise ProtocolError(f"terminated: code {terminated.max()}, expected 0, 1 or {TERMINATED_LIFE_LOST} "
                            "(a life lost)")
    truncated = _field(steps.truncated, FLAG_DTYPE, (num_envs,), "truncated")
    return EnvStepBatch(observations, rewards, terminated != 0, truncated.astype(bool),
                        terminated == TERMINATED_LIFE_LOST)


def encode_actions(actions: np.ndarray, env_group: int = 0, spec: ActionSpec = None) -> seed_pb2.LearnerMessage:
    """`actions` [N] (discrete) or [N, *shape] (continuous `spec`)."""
    dtype = spec.wire_dtype if spec is not None else ACTION_DTYPE
    return seed_pb2.LearnerMessage(
        actions={"actions": np.asarray(actions, dtype).tobytes(), "env_group": env_group})


def decode_actions(message: seed_pb2.Actions, num_envs: int, spec: ActionSpec = None) -> np.ndarray:
    if spec is None or spec.is_discrete:
        return _field(message.actions, ACTION_DTYPE, (num_envs,), "actions")
    return _field(message.actions, spec.wire_dtype, (num_envs, *spec.shape), "actions")
