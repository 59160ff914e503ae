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
    """The pool `make(seed)` makes, with discrete actions; a reset with a seed makes it again."""

    def __init__(self, make: Callable[[int], object]):
        self._make = make
        pool = make(0)
        actions = int(pool.action_space.n)
        super().__init__(pool, EnvSpec(tuple(pool.observation_space.shape), "uint8", actions,
                                       action=ActionSpec.discrete(actions)))

    def reset(self, seed: int | None = None) -> np.ndarray:
        if seed is not None:
            self._env.close()
            self._env = self._make(seed)
        return super().reset()
