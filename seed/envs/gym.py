"""Any gymnasium env with a Box observation and a Discrete action space (CartPole, ...)."""
import gin
import gymnasium as gym
import numpy as np

from seed.envs import ActorEnvs, register_family
from seed.specs import EnvSpec


@register_family("gym", game_parameter="create_gym_envs.env_id")
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
