"""The procgen family on envpool's real Procgen games."""
import ctypes.util

import numpy as np
import pytest

from seed import envs

# tests/run.sh installs the Qt 5 runtime where it may (root and apt-get); elsewhere these are skipped, saying why.
pytestmark = pytest.mark.skipif(ctypes.util.find_library("Qt5Gui") is None,
                                reason="Procgen needs the system's Qt 5 runtime: apt install libqt5gui5")


def test_rgb_frames_and_the_full_action_set():
    with envs.create_procgen_envs(3, game="bigfish") as e:
        assert e.spec.observation_shape == (64, 64, 3) and e.spec.observation_dtype == "uint8"
        assert e.spec.num_actions == 15 and e.spec.frames_per_step == 1
        first = e.reset(seed=0)
        assert first.shape == (3, 64, 64, 3) and first.dtype == np.uint8 and first.std() > 0


def test_episodes_end_and_the_next_step_starts_a_new_level():
    with envs.create_procgen_envs(2, game="starpilot") as e:
        e.reset(seed=1)
        rng = np.random.default_rng(0)
        for _ in range(3000):
            _, _, terminated, truncated = e.step(rng.integers(0, 15, 2))
            ended = terminated.astype(bool) | truncated
            if ended.any():
                break
        assert ended.any()
        _, reward, terminated, truncated = e.step(rng.integers(0, 15, 2))
        assert (reward[ended] == 0).all() and not terminated[ended].any()  # the reset step


def test_one_level_seed_replays_the_same_level_and_the_unlimited_set_does_not():
    def firsts(num_levels, seed):
        with envs.create_procgen_envs(2, game="coinrun", num_levels=num_levels, start_level=7) as e:
            return e.reset(seed=seed)
    np.testing.assert_array_equal(firsts(1, 0)[0], firsts(1, 5)[1])  # one level: the same for every env and seed
    assert not np.array_equal(firsts(0, 0), firsts(0, 5))


def test_unknown_games_and_modes_are_refused_with_the_fix():
    with pytest.raises(ValueError,
                       match=r"unknown Procgen game 'star_pilot' \(did you mean 'starpilot'\?\); use one of bigfish"):
        envs.create_procgen_envs(1, game="star_pilot")
    with pytest.raises(ValueError, match="distribution_mode='extreme'; use 'easy' or 'hard'"):
        envs.create_procgen_envs(1, distribution_mode="extreme")
