"""MuJoCo continuous control: gymnasium's v5 tasks (HalfCheetah, Hopper, Walker2d, Ant, Humanoid,
InvertedPendulum, ...) through the `mujoco` wheel, an optional extra:
.venv/bin/pip install -e '.[mujoco]' in the checkout.

Observations go on the wire as float32 (the simulator's float64 halves to the precision the
networks use anyway); actions come back as float32 within the task's bounds. Normalising
observations is the learner's job (the network's running statistics), not the actor's."""
import gin
import gymnasium as gym
import numpy as np

from seed.envs import ActorEnvs, register_family
from seed.specs import ActionSpec, EnvSpec

TASKS = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5", "HumanoidStandup-v5",
         "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Swimmer-v5", "Pusher-v5")


@register_family("mujoco")
@gin.configurable
def create_mujoco_envs(num_envs: int, task: str = "HalfCheetah-v5") -> ActorEnvs:
    """`num_envs` copies of one MuJoCo task, stepped together in one process (a sync vector env).

    Settings:
        `task`: a gymnasium MuJoCo task id, e.g. 'HalfCheetah-v5', 'Hopper-v5', 'Walker2d-v5', 'Ant-v5',
            'Humanoid-v5', 'InvertedPendulum-v5' ('HalfCheetah-v5'); mujoco_*.gin bind it to the GAME macro.
    """
    if task not in TASKS:
        raise ValueError(f"unknown MuJoCo task {task!r}; use one of {', '.join(TASKS)}")
    try:
        import mujoco  # noqa: F401  (gymnasium's MuJoCo envs import it lazily, with a less helpful error)
    except ImportError as e:
        raise ValueError(f"MuJoCo task {task} needs the mujoco extra: .venv/bin/pip install -e '.[mujoco]' in the "
                         f"checkout ({e})") from e
    env = gym.make_vec(task, num_envs=num_envs, vectorization_mode="sync",
                       wrappers=[lambda e: gym.wrappers.TransformObservation(
                           e, lambda o: o.astype(np.float32),
                           gym.spaces.Box(-np.inf, np.inf, e.observation_space.shape, np.float32))])
    actions = env.single_action_space
    spec = EnvSpec(tuple(env.single_observation_space.shape), "float32", 0,
                   action=ActionSpec.continuous(actions.low, actions.high))
    return ActorEnvs(env, spec)
