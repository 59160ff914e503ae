"""The dmlab family against a stand-in for DeepMind Lab's module (tests/stand_ins/deepmind_lab), which
implements the calls the family makes: DeepMind Lab itself cannot be built on these machines."""
import hashlib
import importlib
import sys

import numpy as np
import pytest

from seed import envs
from tests.processes import REPO_ROOT

STAND_INS = str(REPO_ROOT / "tests" / "stand_ins")


@pytest.fixture
def lab(monkeypatch):
    monkeypatch.syspath_prepend(STAND_INS)
    module = importlib.import_module("deepmind_lab")
    assert "stand_ins" in module.__file__  # never the real engine's module by accident
    module.compiled_levels.clear()
    yield module
    sys.modules.pop("deepmind_lab", None)


def test_seed_rls_frames_and_actions_with_the_reward_summed_over_four_engine_frames(lab):
    with envs.create_dmlab_envs(2) as e:
        assert e.spec.observation_shape == (72, 96, 3) and e.spec.observation_dtype == "uint8"
        assert e.spec.num_actions == 9 and e.spec.frames_per_step == 4
        first = e.reset(seed=0)
        assert first.shape == (2, 72, 96, 3) and first.dtype == np.uint8
        obs, rewards, terminated, truncated = e.step(np.array([0, 1]))  # forward, backward
        assert rewards.tolist() == [4.0, 0.0] and not terminated.any() and not truncated.any()
        assert not np.array_equal(obs, first)
    assert lab.compiled_levels == ["contributed/dmlab30/explore_goal_locations_small"] * 2


def test_an_ended_episode_is_a_termination_and_the_next_step_starts_the_next(lab):
    with envs.create_dmlab_envs(1, action_repeat=8) as e:
        e.reset(seed=3)
        for step in range(1, 100):  # noqa: B007 (read below)
            _, _, terminated, truncated = e.step(np.zeros(1, np.int64))
            if terminated[0]:
                break
        assert terminated[0] and not truncated[0] and step == lab.EPISODE_FRAMES // 8
        _, reward, terminated, _ = e.step(np.zeros(1, np.int64))
        assert reward[0] == 0 and not terminated[0]  # the reset step
        _, reward, _, _ = e.step(np.zeros(1, np.int64))
        assert reward[0] == 8.0  # the new episode plays


def test_resets_are_seeded_per_env(lab):
    def first(seed):
        with envs.create_dmlab_envs(2) as e:
            return e.reset(seed=seed)
    np.testing.assert_array_equal(first(1), first(1))
    assert not np.array_equal(first(1), first(2)) and not np.array_equal(first(1)[0], first(1)[1])


def test_the_level_cache_keeps_a_compiled_map_for_every_later_env(lab, tmp_path):
    for _ in range(2):
        envs.create_dmlab_envs(2, level="seekavoid_arena_01", level_cache_dir=str(tmp_path)).close()
    assert lab.compiled_levels == []  # the envs were made, not reset: nothing compiled yet
    for _ in range(2):
        e = envs.create_dmlab_envs(2, level="seekavoid_arena_01", level_cache_dir=str(tmp_path))
        e.reset(seed=0)
        e.close()
    assert lab.compiled_levels == ["seekavoid_arena_01"]  # once, by the first env; the other three fetched
    digest = hashlib.md5(b"seekavoid_arena_01").hexdigest()
    assert (tmp_path / digest[:3] / digest[3:]).read_bytes() == b"compiled seekavoid_arena_01"


def test_held_out_levels_and_the_engine_settings_reach_the_lab_as_strings(lab, monkeypatch):
    made = []
    original = lab.Lab

    class Recording(original):
        def __init__(self, *args, **kwargs):
            made.append(kwargs["config"])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(lab, "Lab", Recording)
    envs.create_dmlab_envs(1, held_out=True, width=64, height=48, dataset_path="/data/brady",
                           runfiles_path="/opt/lab").close()
    assert made == [{"width": "64", "height": "48", "logLevel": "WARN", "allowHoldOutLevels": "true",
                     "mixerSeed": str(0x600D5EED), "datasetPath": "/data/brady"}]
    assert lab.runfiles_path == "/opt/lab"


def test_without_deepmind_lab_the_error_says_how_to_build_it():
    assert "deepmind_lab" not in sys.modules
    with pytest.raises(ValueError, match="needs DeepMind Lab's Python module `deepmind_lab`, which is not on PyPI: "
                                         "build it from github.com/deepmind/lab"):
        envs.create_dmlab_envs(1)


def test_an_action_repeat_below_one_is_refused():
    with pytest.raises(ValueError, match="action_repeat=0; it must be at least 1"):
        envs.create_dmlab_envs(1, action_repeat=0)
