"""Procgen's normalised score against values computed by hand from the paper's bounds."""
import sys

import pytest

from tests.processes import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import procgen_scores  # noqa: E402


def test_the_bounds_map_to_zero_and_one_and_the_reference_points_between():
    assert procgen_scores.normalized_score("starpilot", 2.5) == 0.0
    assert procgen_scores.normalized_score("starpilot", 64.0) == 1.0
    # OpenAI's PPO at 5M steps (easy, unlimited levels): starpilot 27.3, bigfish 8.4.
    assert procgen_scores.normalized_score("starpilot", 27.3) == pytest.approx(24.8 / 61.5)  # 0.4033
    assert procgen_scores.normalized_score("bigfish", 8.4) == pytest.approx(7.4 / 39.0)  # 0.1897
    assert procgen_scores.normalized_score("starpilot", 27.3, "hard") == pytest.approx(25.8 / 33.5)


def test_every_game_of_the_family_has_bounds_in_both_modes():
    from seed.envs.procgen import DISTRIBUTION_MODES, GAMES
    assert sorted(procgen_scores.BOUNDS) == sorted(GAMES)
    assert all(set(modes) == set(DISTRIBUTION_MODES) for modes in procgen_scores.BOUNDS.values())
    with pytest.raises(ValueError, match="no Procgen bounds for 'star_pilot'"):
        procgen_scores.normalized_score("star_pilot", 1.0)
