"""The Atari-5 score (Aitchison, Sweetser and Hutter, ICML 2023): five games whose weighted
log-normalised scores estimate the median human-normalised score over Atari-57 (about 10 % error):

    score = 10 ** (sum_g w_g * log10(1 + max(HNS_g, 0))) - 1,   HNS_g in percent,

with HNS_g = 100 (return_g - random_g) / (human_g - random_g). The weights are the paper's regression
coefficients (no intercept); random and human are the standard Atari-57 reference scores (the random
and human rows of DQN's evaluation, as rliable and the Atari-5 repository use them)."""
import math

GAMES = ("BattleZone", "DoubleDunk", "NameThisGame", "Phoenix", "Qbert")
WEIGHTS = {"BattleZone": 0.38198, "DoubleDunk": 0.06791, "NameThisGame": 0.31080, "Phoenix": 0.12413,
           "Qbert": 0.08049}
RANDOM = {"BattleZone": 2360.0, "DoubleDunk": -18.6, "NameThisGame": 2292.3, "Phoenix": 761.4, "Qbert": 163.9}
HUMAN = {"BattleZone": 37187.5, "DoubleDunk": -16.4, "NameThisGame": 8049.0, "Phoenix": 7242.6, "Qbert": 13455.0}


def human_normalized(game: str, score: float) -> float:
    """The human-normalised score of a return on `game`, in percent (0: random play, 100: human)."""
    return 100.0 * (score - RANDOM[game]) / (HUMAN[game] - RANDOM[game])


def atari5_score(returns: dict[str, float]) -> float:
    """The Atari-5 estimate of the Atari-57 median human-normalised score (percent) from a return per game."""
    missing = [g for g in GAMES if g not in returns]
    if missing:
        raise ValueError(f"the Atari-5 score needs a return for each of {', '.join(GAMES)}; "
                         f"missing {', '.join(missing)}")
    log_score = sum(WEIGHTS[g] * math.log10(1.0 + max(human_normalized(g, returns[g]), 0.0)) for g in GAMES)
    return 10.0 ** log_score - 1.0


# Issue 77's goal for one default at 10M frames: above Dopamine IQN's 68 at the same budget.
GOAL = 70.0


def even_hns(score: float = GOAL) -> float:
    """The human-normalised score (percent) that, reached on all five games, gives `score`: the
    weights sum to 0.96531, so every game at h gives (1 + h) ** 0.96531 - 1."""
    return (1.0 + score) ** (1.0 / sum(WEIGHTS.values())) - 1.0


def goal_return(game: str, score: float = GOAL) -> float:
    """A game's return at even_hns(score): each game's own threshold for the suite's goal, so that
    the time to it can be read per game (a game past it pulls the score above `score` if the others
    are too)."""
    return RANDOM[game] + even_hns(score) / 100.0 * (HUMAN[game] - RANDOM[game])
