"""dm_control's suite from states (cheetah-run, walker-walk, ...): DeepMind's continuous control
tasks through the `dm-control` wheel, an optional extra: .venv/bin/pip install -e '.[dmc]' in the
checkout.

A task's dict of observations is flattened, in the suite's own key order, into one float32 vector;
actions travel as float32 within the task's bounds (the suite's are [-1, 1]). Every suite task ends
by its time limit (1,000 control steps), which is a truncation: the episode bootstraps past it. With
an action repeat R each agent step holds the action for R control steps and sums their rewards, and
frames count control steps, as the Atari frame skip's do. The reference points of the results
(pytorch_sac's, at 500k steps) use R=1, the default."""
import os

import gin
import gymnasium as gym
import numpy as np

from seed.envs import ActorEnvs, register_family, unknown_name
from seed.specs import ActionSpec, EnvSpec

# No renderer: the suite's tasks run from states, and an absent display would make dm_control's
# default (GLFW) warn at import. A user who renders pixels sets MUJOCO_GL=egl before the import.
os.environ.setdefault("MUJOCO_GL", "disable")


def _suite():
    try:
        from dm_control import suite
    except ImportError as e:
        raise ValueError(f"dm_control tasks need the dmc extra: .venv/bin/pip install -e '.[dmc]' in the checkout "
                         f"({e})") from e
    return suite


def task_names() -> list[str]:
    """Every suite task as DOMAIN-TASK (cheetah-run, ball_in_cup-catch, ...)."""
    return [f"{domain}-{task}" for domain, task in _suite().ALL_TASKS]


class DMControlEnv(gym.Env):
    """One suite task as a gymnasium env: flat float32 observations, the action held `action_repeat`
    control steps. A reset with a seed reloads the task with that seed, which is how the suite seeds."""

    def __init__(self, domain: str, task: str, action_repeat: int):
        self._domain, self._task, self._action_repeat = domain, task, action_repeat
        self._env = self._load(None)
        spec = self._env.action_spec()
        self.action_space = gym.spaces.Box(spec.minimum.astype(np.float32), spec.maximum.astype(np.float32),
                                           dtype=np.float32)
        size = sum(int(np.prod(s.shape)) for s in self._env.observation_spec().values())
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def _load(self, seed):
        return _suite().load(self._domain, self._task, task_kwargs={"random": seed})

    @staticmethod
    def _flatten(observation) -> np.ndarray:
        return np.concatenate([np.asarray(v, np.float32).ravel() for v in observation.values()])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self._env.close()
            self._env = self._load(seed)
        return self._flatten(self._env.reset().observation), {}

    def step(self, action):
        reward = 0.0
        for _ in range(self._action_repeat):
            step = self._env.step(action)
            reward += step.reward or 0.0
            if step.last():
                break
        # The suite ends an episode with discount 0 at a terminal state, 1 at its time limit.
        ended = step.last()
        terminated = bool(ended and step.discount == 0.0)
        return self._flatten(step.observation), reward, terminated, bool(ended and not terminated), {}

    def close(self):
        self._env.close()


@register_family("dmc")
@gin.configurable
def create_dmc_envs(num_envs: int, task: str = "cheetah-run", action_repeat: int = 1) -> ActorEnvs:
    """`num_envs` copies of one dm_control suite task, stepped together in one process.

    Settings:
        `task`: DOMAIN-TASK of the suite, e.g. 'cheetah-run', 'walker-walk', 'hopper-hop',
            'quadruped-run', 'ball_in_cup-catch' ('cheetah-run'); dmc_*.gin bind it to the GAME macro.
        `action_repeat`: control steps per agent step, rewards summed (1: every control step is an
            agent step, pytorch_sac's protocol; DrQ and Dreamer use 2 to 8). Frames count control steps.
    """
    if action_repeat < 1:
        raise ValueError(f"create_dmc_envs.action_repeat={action_repeat}; it must be at least 1")
    names = task_names()
    if task not in names:
        raise unknown_name("dm_control task", task, list(names), how="use DOMAIN-TASK, one of")
    domain, name = task.split("-", 1)
    env = gym.vector.SyncVectorEnv([lambda: DMControlEnv(domain, name, action_repeat)] * num_envs)
    actions = env.single_action_space
    spec = EnvSpec(tuple(env.single_observation_space.shape), "float32", 0, frames_per_step=action_repeat,
                   action=ActionSpec.continuous(actions.low, actions.high))
    return ActorEnvs(env, spec)
