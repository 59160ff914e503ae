"""What the learner and its actors must agree on about an environment."""
import dataclasses

import numpy as np

DISCRETE_ACTION_DTYPE = np.dtype("<i4")
# `terminated` codes an env family's step gives (and the wire carries): 0 running, 1 the episode ended,
# and this one: a life was lost, an end for learning (no bootstrap past it, the next step starts afresh)
# while the game, and so the episode whose return is reported, goes on.
TERMINATED_LIFE_LOST = 2
CONTINUOUS_ACTION_DTYPE = np.dtype("<f4")


@dataclasses.dataclass(frozen=True)
class ActionSpec:
    """An env's actions: discrete (`num_actions` > 0; int32 on the wire) or continuous (`shape`,
    with per-element bounds `low` / `high` flattened in C order; float32 on the wire)."""
    num_actions: int = 0
    shape: tuple[int, ...] = ()
    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()

    @classmethod
    def discrete(cls, num_actions: int) -> "ActionSpec":
        return cls(num_actions=int(num_actions))

    @classmethod
    def continuous(cls, low: np.ndarray, high: np.ndarray) -> "ActionSpec":
        low, high = np.asarray(low, np.float32), np.asarray(high, np.float32)
        if low.shape != high.shape:
            raise ValueError(f"action bounds of shapes {low.shape} and {high.shape}; they must match")
        return cls(shape=tuple(int(d) for d in low.shape), low=tuple(float(x) for x in low.ravel()),
                   high=tuple(float(x) for x in high.ravel()))

    @property
    def is_discrete(self) -> bool:
        return self.num_actions > 0

    @property
    def wire_dtype(self) -> np.dtype:
        return DISCRETE_ACTION_DTYPE if self.is_discrete else CONTINUOUS_ACTION_DTYPE

    @property
    def wire_shape(self) -> tuple[int, ...]:
        """One env's action: () for a discrete action, `shape` for a continuous one."""
        return () if self.is_discrete else self.shape

    def describe(self) -> str:
        if self.is_discrete and not (self.shape or self.low or self.high):
            return f"{self.num_actions} actions"
        if self.is_discrete:  # only a malformed spec from a bad actor has both
            return f"{self.num_actions} actions with shape {self.shape} and bounds {self.low}, {self.high}"
        shape = "x".join(str(d) for d in self.shape) or "scalar"
        return f"continuous {shape} actions in [{min(self.low, default=0):g}, {max(self.high, default=0):g}]"


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """One environment's single-frame observation and its actions.

    `num_actions` is the number of discrete actions (0 for continuous ones); `action` the full
    action spec (discrete `num_actions` when not given). `frames_per_step` converts agent steps
    to environment frames (the ALE frame skip); budgets and progress are reported in frames,
    like SEED RL.
    """
    observation_shape: tuple[int, ...]
    observation_dtype: str
    num_actions: int
    frames_per_step: int = 1
    action: ActionSpec | None = None

    def __post_init__(self):
        if self.action is None:
            object.__setattr__(self, "action", ActionSpec.discrete(self.num_actions))
        elif self.action.num_actions != self.num_actions:
            raise ValueError(f"EnvSpec: num_actions {self.num_actions} disagrees with its action spec "
                             f"({self.action.describe()})")

    @property
    def observation_nbytes(self) -> int:
        return int(np.prod(self.observation_shape)) * np.dtype(self.observation_dtype).itemsize

    def describe(self) -> str:
        shape = "x".join(str(d) for d in self.observation_shape)
        return f"observations {shape} {self.observation_dtype}, {self.action.describe()}"
