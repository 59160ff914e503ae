"""What the learner and its actors must agree on about an environment."""
import dataclasses
from typing import Tuple

import numpy as np


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """One environment's single-frame observation and its discrete actions.

    `frames_per_step` converts agent steps to environment frames (the ALE frame
    skip); budgets and progress are reported in frames, like SEED RL.
    """
    observation_shape: Tuple[int, ...]
    observation_dtype: str
    num_actions: int
    frames_per_step: int = 1

    @property
    def observation_nbytes(self) -> int:
        return int(np.prod(self.observation_shape)) * np.dtype(self.observation_dtype).itemsize

    def describe(self) -> str:
        shape = "x".join(str(d) for d in self.observation_shape)
        return f"observations {shape} {self.observation_dtype}, {self.num_actions} actions"
