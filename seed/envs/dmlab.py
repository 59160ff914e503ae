"""DeepMind Lab, written against its Python API (`deepmind_lab.Lab`) as SEED RL and IMPALA call it.

DeepMind Lab is not on PyPI: it is built from github.com/deepmind/lab with Bazel, which gives a
`deepmind_lab` module. This family runs wherever that module imports; the project's own machines
cannot build it, so its tests drive this module against a stand-in that implements the same calls
(tests/stand_ins/deepmind_lab), not the engine.

What reaches the learner is SEED RL's: RGB frames of 72 x 96 (`RGB_INTERLEAVED`), SEED RL's 9
actions, and the reward summed over the action repeat. The action repeat is 4, as IMPALA trained, and
a setting that every run's saved config records. Frames count engine frames, agent steps x the
repeat, as Atari's do. DeepMind Lab reports only that an episode
ended (its time limit, mostly), so an end is a termination, as in SEED RL and IMPALA."""
import hashlib
import os
import shutil

import gin
import gymnasium as gym
import numpy as np

from seed.envs import ActorEnvs, register_family
from seed.specs import ActionSpec, EnvSpec

# SEED RL's and IMPALA's action set: (look left/right, look down/up, strafe left/right,
# forward/backward, fire, jump, crouch) per action.
ACTIONS = (
    (0, 0, 0, 1, 0, 0, 0),    # forward
    (0, 0, 0, -1, 0, 0, 0),   # backward
    (0, 0, -1, 0, 0, 0, 0),   # strafe left
    (0, 0, 1, 0, 0, 0, 0),    # strafe right
    (-20, 0, 0, 0, 0, 0, 0),  # look left
    (20, 0, 0, 0, 0, 0, 0),   # look right
    (-20, 0, 0, 1, 0, 0, 0),  # look left and forward
    (20, 0, 0, 1, 0, 0, 0),   # look right and forward
    (0, 0, 0, 0, 1, 0, 0),    # fire
)

# DMLab-30 (Espeholt et al. 2018): level scripts under contributed/dmlab30/. Any other name is passed
# to the engine as a level script path as it is (seekavoid_arena_01, nav_maze_static_01, ...).
DMLAB30 = (
    "rooms_collect_good_objects_train", "rooms_exploit_deferred_effects_train", "rooms_select_nonmatching_object",
    "rooms_watermaze", "rooms_keys_doors_puzzle", "language_select_described_object",
    "language_select_located_object", "language_execute_random_task", "language_answer_quantitative_question",
    "lasertag_one_opponent_small", "lasertag_three_opponents_small", "lasertag_one_opponent_large",
    "lasertag_three_opponents_large", "natlab_fixed_large_map", "natlab_varying_map_regrowth",
    "natlab_varying_map_randomized", "skymaze_irreversible_path_hard", "skymaze_irreversible_path_varied",
    "psychlab_arbitrary_visuomotor_mapping", "psychlab_continuous_recognition", "psychlab_sequential_comparison",
    "psychlab_visual_search", "explore_object_locations_small", "explore_object_locations_large",
    "explore_obstructed_goals_small", "explore_obstructed_goals_large", "explore_goal_locations_small",
    "explore_goal_locations_large", "explore_object_rewards_few", "explore_object_rewards_many",
)
# The mixer seed DeepMind Lab's docs give for held-out evaluation levels.
HELD_OUT_MIXER_SEED = 0x600D5EED


def level_script(level: str) -> str:
    return f"contributed/dmlab30/{level}" if level in DMLAB30 else level


def _deepmind_lab():
    try:
        import deepmind_lab
    except ImportError as e:
        raise ValueError("the dmlab family needs DeepMind Lab's Python module `deepmind_lab`, which is not on PyPI: "
                         "build it from github.com/deepmind/lab (bazel build -c opt //python/pip_package:"
                         f"build_pip_package) and pip install its wheel into .venv ({e})") from e
    return deepmind_lab


class LevelCache:
    """DeepMind Lab's level cache protocol: compiled maps kept under `directory` by key, so that each
    env does not compile the same map again (minutes for some levels)."""

    def __init__(self, directory: str):
        self._directory = directory

    def _path(self, key: str) -> str:
        digest = hashlib.md5(key.encode()).hexdigest()
        return os.path.join(self._directory, digest[:3], digest[3:])

    def fetch(self, key: str, pk3_path: str) -> bool:
        try:
            shutil.copyfile(self._path(key), pk3_path)
            return True
        except OSError:
            return False

    def write(self, key: str, pk3_path: str) -> None:
        path = self._path(key)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            temporary = f"{path}.{os.getpid()}.tmp"  # envs of several actors may write one key at once
            shutil.copyfile(pk3_path, temporary)
            os.replace(temporary, path)


class DMLabEnv(gym.Env):
    """One DeepMind Lab level as a gymnasium env of RGB frames and SEED RL's actions."""

    def __init__(self, level: str, action_repeat: int, width: int, height: int, level_cache_dir: str | None,
                 held_out: bool, dataset_path: str | None):
        lab = _deepmind_lab()
        config = {"width": width, "height": height, "logLevel": "WARN"}
        if held_out:
            config.update(allowHoldOutLevels="true", mixerSeed=HELD_OUT_MIXER_SEED)
        if dataset_path:
            config["datasetPath"] = dataset_path  # psychlab levels read their images from it
        self._env = lab.Lab(level_script(level), ["RGB_INTERLEAVED"],
                            config={k: str(v) for k, v in config.items()},
                            level_cache=LevelCache(level_cache_dir) if level_cache_dir else None)
        self._action_repeat = action_repeat
        self._actions = np.array(ACTIONS, np.intc)
        self._rng = np.random.default_rng()
        self.action_space = gym.spaces.Discrete(len(ACTIONS))
        self.observation_space = gym.spaces.Box(0, 255, (height, width, 3), np.uint8)
        self._last = np.zeros(self.observation_space.shape, np.uint8)

    def _observation(self) -> np.ndarray:
        self._last = self._env.observations()["RGB_INTERLEAVED"]
        return self._last

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._env.reset(seed=int(self._rng.integers(0, 2 ** 31 - 1)))
        return self._observation(), {}

    def step(self, action):
        reward = self._env.step(self._actions[int(action)], num_steps=self._action_repeat)
        ended = not self._env.is_running()
        # An ended episode has no observation left; its last frame stands in (terminal: never bootstrapped).
        return self._last if ended else self._observation(), float(reward), ended, False, {}

    def close(self):
        self._env.close()


@register_family("dmlab")
@gin.configurable
def create_dmlab_envs(num_envs: int, level: str = "explore_goal_locations_small", action_repeat: int = 4,
                      width: int = 96, height: int = 72, level_cache_dir: str | None = None, held_out: bool = False,
                      dataset_path: str | None = None, runfiles_path: str | None = None) -> ActorEnvs:
    """`num_envs` DeepMind Lab envs of one level, stepped together in one process.

    Settings:
        `level`: a DMLab-30 level ('explore_goal_locations_small', 'rooms_watermaze', ...; run from
            contributed/dmlab30/) or any level script path of the engine ('seekavoid_arena_01')
            ('explore_goal_locations_small'); dmlab_*.gin bind it to the GAME macro.
        `action_repeat`: engine frames per agent step, rewards summed (4, IMPALA's); frames count engine frames.
        `width`: the RGB frame's width in pixels (96, SEED RL's and IMPALA's).
        `height`: the RGB frame's height in pixels (72).
        `level_cache_dir`: a directory where compiled maps are kept and shared by every env (None: no cache).
        `held_out`: the held-out evaluation variants of the levels (allowHoldOutLevels and the test mixer seed).
        `dataset_path`: the directory of the Brady-Konkle-Oliva images the psychlab levels read (None).
        `runfiles_path`: DeepMind Lab's runfiles directory when it is not where the module finds it (None).
    """
    if action_repeat < 1:
        raise ValueError(f"create_dmlab_envs.action_repeat={action_repeat}; it must be at least 1")
    if runfiles_path:
        _deepmind_lab().set_runfiles_path(runfiles_path)
    env = gym.vector.SyncVectorEnv([lambda: DMLabEnv(level, action_repeat, width, height, level_cache_dir, held_out,
                                                     dataset_path)] * num_envs)
    spec = EnvSpec((height, width, 3), "uint8", len(ACTIONS), frames_per_step=action_repeat,
                   action=ActionSpec.discrete(len(ACTIONS)))
    return ActorEnvs(env, spec)
