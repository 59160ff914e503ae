"""A stand-in for DeepMind Lab's Python module, for tests only: DeepMind Lab cannot be built on the
project's machines. It implements the calls seed/envs/dmlab.py makes, with the real module's
contract as its docs state it (config values as strings, actions as 7 intc, no observations once an
episode has ended, the level cache's fetch/write), and renders no 3D world: a frame is a pattern of
the episode's seed and its frame count, and the reward is the number of frames moved forward.

Tests put this directory on sys.path (PYTHONPATH for child processes) to import it as
`deepmind_lab`. Nothing of the project imports it otherwise."""
import os
import tempfile

import numpy as np

EPISODE_FRAMES = 240  # the real levels run 60-180 s at 60 frames/s; short, so a test sees several ends
runfiles_path = None
compiled_levels = []  # the levels this process compiled (not fetched from a level cache)


def set_runfiles_path(path):
    global runfiles_path
    runfiles_path = path


class Lab:
    def __init__(self, level, observations, config=None, renderer="software", level_cache=None):
        if not isinstance(level, str) or not all(isinstance(o, str) for o in observations):
            raise TypeError("level and observation names must be strings")
        if "RGB_INTERLEAVED" not in observations:
            raise ValueError(f"stand-in: unknown observations {observations}")
        config = dict(config or {})
        for key, value in config.items():
            if not isinstance(value, str):  # as the real module: 'Config values must be strings'
                raise TypeError(f"Config values must be strings: {key}={value!r}")
        self.level, self.config, self.level_cache = level, config, level_cache
        self._shape = (int(config.get("height", 240)), int(config.get("width", 320)), 3)
        self._running, self._frame, self._seed = False, 0, 0
        self._compiled = False

    def _compile(self):
        """The first reset compiles the map, or fetches it from the level cache."""
        if self._compiled:
            return
        self._compiled = True
        pk3 = os.path.join(tempfile.mkdtemp(), "map.pk3")
        if self.level_cache is not None and self.level_cache.fetch(self.level, pk3):
            return
        with open(pk3, "wb") as f:
            f.write(f"compiled {self.level}".encode())
        compiled_levels.append(self.level)
        if self.level_cache is not None:
            self.level_cache.write(self.level, pk3)

    def reset(self, episode=-1, seed=None):
        if seed is not None and not (isinstance(seed, int) and 0 <= seed < 2 ** 31):
            raise ValueError(f"seed must be an int in [0, 2**31), got {seed!r}")
        self._compile()
        self._running, self._frame, self._seed = True, 0, seed or 0
        return True

    def is_running(self):
        return self._running

    def observations(self):
        if not self._running:
            raise RuntimeError("Environment in wrong status for call to observations()")
        frame = np.empty(self._shape, np.uint8)
        frame[...] = (self._seed + 3 * self._frame + np.arange(self._shape[1])[None, :, None]) % 256
        return {"RGB_INTERLEAVED": frame}

    def step(self, action, num_steps=1):
        if not self._running:
            raise RuntimeError("Environment in wrong status to advance")
        if not isinstance(action, np.ndarray) or action.dtype != np.intc or action.shape != (7,):
            raise TypeError(f"action must be a numpy array of 7 intc, got {action!r}")
        steps = min(int(num_steps), EPISODE_FRAMES - self._frame)
        self._frame += steps
        if self._frame >= EPISODE_FRAMES:
            self._running = False
        return float(steps * max(int(action[3]), 0))

    def close(self):
        self._running = False
