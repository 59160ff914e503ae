"""Any gymnasium env with a Box observation and a Discrete or Box action space (CartPole,
Acrobot, Pendulum, ...)."""
import gin
import gymnasium as gym
import numpy as np

from seed.envs import ActorEnvs, register_family
from seed.specs import ActionSpec, EnvSpec


@register_family("gym")
@gin.configurable
def create_gym_envs(num_envs: int, env_id: str = "CartPole-v1") -> ActorEnvs:
    """`num_envs` copies of one gymnasium env, stepped together in one process (a sync vector env).

    Continuous (Box) actions are sent as float32 within the space's bounds; which agents take
    them is the learner's check.

    Settings:
        `env_id`: any registered gymnasium id with a Box observation and a Discrete or Box action space
            ('CartPole-v1'); the classic_*.gin configs bind it to the GAME macro.
    """
    try:
        env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync")
    except gym.error.Error as e:
        raise ValueError(f"cannot make gymnasium env {env_id!r}: {e}") from e
    space, actions = env.single_observation_space, env.single_action_space
    if isinstance(actions, gym.spaces.Discrete):
        action = ActionSpec.discrete(actions.n)
    elif isinstance(actions, gym.spaces.Box):
        action = ActionSpec.continuous(actions.low, actions.high)
    else:
        env.close()
        raise ValueError(f"{env_id} has action space {actions}; seed takes Discrete or Box actions")
    spec = EnvSpec(tuple(space.shape), np.dtype(space.dtype).name, action.num_actions, action=action)
    return ActorEnvs(env, spec)
