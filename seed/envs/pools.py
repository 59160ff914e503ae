"""envpool's C++ vector envs (Football, Procgen) as `ActorEnvs`: one pool of N envs per actor, env i
seeded with seed + i, next-step autoreset as every family has it. envpool seeds a pool when it
makes it, so a reset with a seed makes the pool again."""
from collections.abc import Callable

import numpy as np

from seed.envs import ActorEnvs
from seed.specs import ActionSpec, EnvSpec


def envpool_module(family: str, extra: str):
    try:
        import envpool
    except ImportError as e:
        raise ValueError(f"{family} needs the {extra} extra: .venv/bin/pip install -e '.[{extra}]' in the checkout "
                         f"(envpool 1.2.5, Python 3.11) ({e})") from e
    return envpool


class PoolEnvs(ActorEnvs):
    """A pool made by `make(seed)`, with discrete actions; `_rewards` lets a family add to the pool's."""

    def __init__(self, num_envs: int, make: Callable[[int], object]):
        self._make = make
        self._pool = make(0)
        actions = int(self._pool.action_space.n)
        self.spec = EnvSpec(tuple(self._pool.observation_space.shape), "uint8", actions,
                            action=ActionSpec.discrete(actions))
        self.num_envs = num_envs
        self._obs_shape = (num_envs, *self.spec.observation_shape)
        self._ended = np.zeros(num_envs, bool)  # which envs' next step is their reset step

    def reset(self, seed: int | None = None) -> np.ndarray:
        if seed is not None:
            self._pool.close()
            self._pool = self._make(seed)
        observations, _ = self._pool.reset()
        self._ended[:] = False
        return self._observations(observations)

    def step(self, actions: np.ndarray):
        observations, rewards, terminated, truncated, info = self._pool.step(np.asarray(actions, np.int32))
        rewards = self._rewards(observations, np.asarray(rewards, np.float32), info, self._ended)
        terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
        self._ended = terminated | truncated
        return self._observations(observations), rewards, terminated.astype(np.uint8), truncated

    def _rewards(self, observations: np.ndarray, rewards: np.ndarray, info: dict, first: np.ndarray) -> np.ndarray:
        """The rewards the learner gets (the pool's; a family may add to them)."""
        return rewards

    def close(self) -> None:
        self._pool.close()
