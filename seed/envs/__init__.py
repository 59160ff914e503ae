"""Environment families shared by actors (which step them) and the learner
(which only reads their spec): one module per family (atari.py, gym.py), each
registering its factory in FAMILIES.

Every factory returns an `ActorEnvs`: N environments stepped together, raw
(unclipped) float32 rewards, single frames (the learner stacks), and
gymnasium's next-step autoreset: the step after an episode end ignores its
action and returns the new episode's first observation with reward 0. The
learner recognises that step from the previous step's end flags; actors do
nothing special. An Atari life lost (`terminal_on_life_loss`) is such an end
whose game goes on: its `terminated` code says so
(`seed.specs.TERMINATED_LIFE_LOST`), and the step after it ignores its action
as a reset step does while the emulator plays on.
"""
import difflib
from collections.abc import Callable, Iterable

import gin
import gymnasium
import numpy as np

from seed.specs import EnvSpec


class ActorEnvs:
    """N environments behind one gymnasium vector env with next-step autoreset."""

    def __init__(self, vector_env: gymnasium.vector.VectorEnv, spec: EnvSpec):
        self._env = vector_env
        self.spec = spec
        self.num_envs = vector_env.num_envs
        self._obs_shape = (self.num_envs, *spec.observation_shape)

    def reset(self, seed: int | None = None) -> np.ndarray:
        observations, _ = self._env.reset(seed=seed)
        return self._observations(observations)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(observations, float32 rewards, uint8 `terminated` codes as on the wire, bool truncated)."""
        actions = np.asarray(actions, np.int64 if self.spec.action.is_discrete else np.float32)
        observations, rewards, terminated, truncated, info = self._env.step(self._actions(actions))
        terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
        rewards = self._rewards(np.asarray(rewards, np.float32), observations, terminated | truncated, info)
        return (self._observations(observations), rewards, self._terminated_codes(terminated, truncated, info),
                truncated)

    def _rewards(self, rewards: np.ndarray, observations: np.ndarray, ended: np.ndarray, info: dict) -> np.ndarray:
        """The raw rewards the learner gets (the env's; a family may add to them, as Football's checkpoints)."""
        return rewards

    def _actions(self, actions: np.ndarray) -> np.ndarray:
        """The actions the envs take (a family may override some)."""
        return actions

    def _terminated_codes(self, terminated: np.ndarray, truncated: np.ndarray, info: dict) -> np.ndarray:
        """uint8 codes from the vector env's terminated flags (a family may add TERMINATED_LIFE_LOST)."""
        return terminated.astype(np.uint8)

    def _observations(self, observations: np.ndarray) -> np.ndarray:
        # ale-py keeps a stack axis of size 1 (stack_num=1); drop it.
        return np.ascontiguousarray(observations, self.spec.observation_dtype).reshape(self._obs_shape)

    def close(self) -> None:
        self._env.close()

    def __enter__(self) -> "ActorEnvs":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


# Family name -> its gin-configurable factory(num_envs, ...). A family's configs bind its game or
# task setting to the GAME macro (`create_atari_envs.game = %GAME`), so `--game` is one binding,
# GAME='Breakout', in every family.
FAMILIES: dict[str, Callable[..., "ActorEnvs"]] = {}


def register_family(name: str):
    """Decorator for a family's gin-configurable factory."""
    def register(factory):
        FAMILIES[name] = factory
        return factory
    return register


@gin.configurable
def create_envs(num_envs: int, factory=None) -> ActorEnvs:
    """`num_envs` environments from the env factory the configs select.

    Settings:
        `factory`: the family's gin-configurable factory, called with `num_envs` (None: `create_gym_envs`);
            the Atari configs set `@create_atari_envs`.
    """
    return (factory or FAMILIES["gym"])(num_envs)


def did_you_mean(name: str, known: Iterable[str], shown: Callable[[str], str] = str) -> str:
    """' (did you mean X?)' with the known name closest to `name` as `shown` writes it, or '' when none
    is close: a typo is the usual cause of an unknown name, and a wrong guess misleads more than none."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    return f" (did you mean {shown(close[0])!r}?)" if close else ""


def unknown_name(what: str, name: str, known: list[str], how: str = "use one of") -> ValueError:
    """The one-line error for a game or task the family does not have: the closest known name first,
    then the names to choose from."""
    return ValueError(f"unknown {what} {name!r}{did_you_mean(name, known)}; {how} {', '.join(known)}")


def env_spec() -> EnvSpec:
    """The configured env's spec, from one throwaway instance."""
    envs = create_envs(1)
    try:
        return envs.spec
    finally:
        envs.close()


# The families register themselves on import; after the definitions above, which they use.
from seed.envs.atari import ale_rom_id, create_atari_envs  # noqa: E402,F401
from seed.envs.dmc import create_dmc_envs  # noqa: E402,F401
from seed.envs.dmlab import create_dmlab_envs  # noqa: E402,F401
from seed.envs.football import create_football_envs  # noqa: E402,F401
from seed.envs.gym import create_gym_envs  # noqa: E402,F401
from seed.envs.mujoco import create_mujoco_envs  # noqa: E402,F401
from seed.envs.procgen import create_procgen_envs  # noqa: E402,F401
