"""The Atari-5 score against values computed by hand from the formula and the constants."""
import math
import sys

import pytest

from tests.processes import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import atari5  # noqa: E402


def test_random_play_scores_zero_and_human_play_one_hundred_percent_on_every_game():
    assert atari5.atari5_score(atari5.RANDOM) == pytest.approx(0.0, abs=1e-12)
    # Every HNS 100: 10 ** (sum w * log10 101) - 1, and the weights sum to 0.96531, not 1.
    assert sum(atari5.WEIGHTS.values()) == pytest.approx(0.96531)
    assert atari5.atari5_score(atari5.HUMAN) == pytest.approx(101 ** 0.96531 - 1)
    assert atari5.atari5_score(atari5.HUMAN) == pytest.approx(85.06, abs=0.01)


def test_a_hand_computed_mixed_result():
    returns = {"BattleZone": 20_000.0, "DoubleDunk": -20.0, "NameThisGame": 5_000.0, "Phoenix": 4_000.0,
               "Qbert": 10_000.0}
    # HNS: BattleZone 100 * 17640 / 34827.5 = 50.65; DoubleDunk below random: 0 (clamped);
    # NameThisGame 100 * 2707.7 / 5756.7 = 47.04; Phoenix 100 * 3238.6 / 6481.2 = 49.97;
    # Qbert 100 * 9836.1 / 13291.1 = 74.00.
    assert atari5.human_normalized("BattleZone", 20_000.0) == pytest.approx(50.649, abs=1e-3)
    assert atari5.human_normalized("DoubleDunk", -20.0) < 0
    log_score = (0.38198 * math.log10(51.649) + 0.06791 * 0 + 0.31080 * math.log10(48.036)
                 + 0.12413 * math.log10(50.969) + 0.08049 * math.log10(75.005))
    assert atari5.atari5_score(returns) == pytest.approx(10 ** log_score - 1, rel=1e-4)
    assert atari5.atari5_score(returns) == pytest.approx(33.66, abs=0.01)


def test_a_missing_game_is_named():
    with pytest.raises(ValueError, match="missing Phoenix, Qbert"):
        atari5.atari5_score({"BattleZone": 0, "DoubleDunk": 0, "NameThisGame": 0})


def test_each_games_goal_return_gives_the_goal_score_when_all_five_reach_it():
    # (1 + h) ** 0.96531 = 71 -> h = 71 ** (1 / 0.96531) - 1 = 81.75 % on every game.
    assert atari5.even_hns(70.0) == pytest.approx(71 ** (1 / 0.96531) - 1, rel=1e-9)
    assert atari5.even_hns(70.0) == pytest.approx(81.75, abs=0.01)
    assert atari5.goal_return("DoubleDunk") == pytest.approx(-18.6 + 0.81753 * 2.2, abs=1e-3)
    assert atari5.atari5_score({g: atari5.goal_return(g) for g in atari5.GAMES}) == pytest.approx(70.0)
