"""Environment factories shared by actors (which step them) and the learner
(which only reads their spec).

Every factory returns an `ActorEnvs`: N environments stepped together, raw
(unclipped) float32 rewards, single frames (the learner stacks), and
gymnasium's next-step autoreset: the step after an episode end ignores its
action and returns the new episode's first observation with reward 0. The
learner recognises that step from the previous step's end flags; actors do
nothing special.
"""
import re
from typing import Optional, Tuple

import gin
import gymnasium as gym
import numpy as np

from seed.settings import require_fraction, require_non_negative, require_positive
from seed.specs import EnvSpec


class ActorEnvs:
    """N environments behind one gymnasium vector env with next-step autoreset."""

    def __init__(self, vector_env: gym.vector.VectorEnv, spec: EnvSpec):
        self._env = vector_env
        self.spec = spec
        self.num_envs = vector_env.num_envs
        self._obs_shape = (self.num_envs, *spec.observation_shape)

    def reset(self, seed: Optional[int] = None) -> np.ndarray:
        observations, _ = self._env.reset(seed=seed)
        return self._observations(observations)

    def step(self, actions: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        observations, rewards, terminated, truncated, _ = self._env.step(np.asarray(actions, np.int64))
        return (self._observations(observations), np.asarray(rewards, np.float32),
                np.asarray(terminated, bool), np.asarray(truncated, bool))

    def _observations(self, observations: np.ndarray) -> np.ndarray:
        # ale-py keeps a stack axis of size 1 (stack_num=1); drop it.
        return np.ascontiguousarray(observations, self.spec.observation_dtype).reshape(self._obs_shape)

    def close(self) -> None:
        self._env.close()


def ale_rom_id(game: str) -> str:
    """'Pong' / 'SpaceInvaders' / 'space_invaders' -> ale-py's ROM id."""
    from ale_py import roms
    rom_id = re.sub(r"(?<!^)(?=[A-Z])", "_", game.strip()).lower().replace("-", "_")
    known = roms.get_all_rom_ids()
    if rom_id not in known:
        raise ValueError(f"unknown Atari game {game!r}: ale-py has no ROM {rom_id!r}. "
                         f"Use a name like 'Pong' or 'SpaceInvaders' (known: {', '.join(sorted(known)[:12])}, ...)")
    return rom_id


@gin.configurable
def create_atari_envs(num_envs: int,
                      game: str = "Pong",
                      frame_skip: int = 4,
                      noop_max: int = 30,
                      max_pool: bool = True,
                      frame_size: int = 84,
                      repeat_action_probability: float = 0.0,
                      terminal_on_life_loss: bool = False,
                      max_episode_frames: int = 108_000,
                      full_action_space: bool = False,
                      fire_reset: bool = False,
                      num_threads: int = 1) -> ActorEnvs:
    """Atari through ale-py's native vector env with the standard preprocessing.

    Grayscale `frame_size`^2 frames, max-pooled over the last two of each
    `frame_skip`, up to `noop_max` no-ops at reset, an episode cut at
    `max_episode_frames` reported as truncation. Rewards stay unclipped and
    frames unstacked: the learner does both.
    """
    # ale-py hangs on a frame size of 0 and takes a negative noop_max or a probability above 1.
    require_positive("create_atari_envs", frame_skip=frame_skip, frame_size=frame_size)
    require_non_negative("create_atari_envs", noop_max=noop_max, max_episode_frames=max_episode_frames,
                         num_threads=num_threads)
    require_fraction("create_atari_envs", repeat_action_probability=repeat_action_probability)
    from ale_py.vector_env import AtariVectorEnv
    env = AtariVectorEnv(
        ale_rom_id(game), num_envs, num_threads=num_threads, batch_size=num_envs,
        max_num_frames_per_episode=max_episode_frames,
        repeat_action_probability=repeat_action_probability,
        full_action_space=full_action_space, autoreset_mode="NextStep",
        img_height=frame_size, img_width=frame_size, grayscale=True, stack_num=1,
        frameskip=frame_skip, maxpool=max_pool, noop_max=noop_max,
        episodic_life=terminal_on_life_loss, reward_clipping=False, use_fire_reset=fire_reset)
    spec = EnvSpec((frame_size, frame_size), "uint8", int(env.single_action_space.n), frame_skip)
    return ActorEnvs(env, spec)


@gin.configurable
def create_gym_envs(num_envs: int, env_id: str = "CartPole-v1") -> ActorEnvs:
    """Any gymnasium env with a Box observation and a Discrete action space."""
    try:
        env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync")
    except gym.error.Error as e:
        raise ValueError(f"cannot make gymnasium env {env_id!r}: {e}") from e
    if not isinstance(env.single_action_space, gym.spaces.Discrete):
        raise ValueError(f"{env_id} has action space {env.single_action_space}; seed needs Discrete actions")
    space = env.single_observation_space
    spec = EnvSpec(tuple(space.shape), np.dtype(space.dtype).name, int(env.single_action_space.n))
    return ActorEnvs(env, spec)


@gin.configurable
def create_envs(num_envs: int, factory=create_gym_envs) -> ActorEnvs:
    """The env factory the configs select (`create_envs.factory = @create_atari_envs`)."""
    return factory(num_envs)


def env_spec() -> EnvSpec:
    """The configured env's spec, from one throwaway instance."""
    envs = create_envs(1)
    try:
        return envs.spec
    finally:
        envs.close()
