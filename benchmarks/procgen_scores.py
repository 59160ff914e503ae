"""Procgen's normalised score (Cobbe et al. 2020, "Leveraging Procedural Generation to Benchmark
Reinforcement Learning", their table of R_min and R_max per game and distribution mode):

    normalised = (R - R_min) / (R_max - R_min),

R_min about a random policy's return (or the return of a policy that never finishes a level) and
R_max the most a game allows, so 1 is the best possible return and 0 about random."""

# game: {mode: (R_min, R_max)}
BOUNDS = {
    "coinrun": {"easy": (5.0, 10.0), "hard": (5.0, 10.0)},
    "starpilot": {"easy": (2.5, 64.0), "hard": (1.5, 35.0)},
    "caveflyer": {"easy": (3.5, 12.0), "hard": (2.0, 13.4)},
    "dodgeball": {"easy": (1.5, 19.0), "hard": (1.5, 19.0)},
    "fruitbot": {"easy": (-1.5, 32.4), "hard": (-0.5, 27.2)},
    "chaser": {"easy": (0.5, 13.0), "hard": (0.5, 14.2)},
    "miner": {"easy": (1.5, 13.0), "hard": (1.5, 20.0)},
    "jumper": {"easy": (3.0, 10.0), "hard": (1.0, 10.0)},
    "leaper": {"easy": (3.0, 10.0), "hard": (1.5, 10.0)},
    "maze": {"easy": (5.0, 10.0), "hard": (4.0, 10.0)},
    "bigfish": {"easy": (1.0, 40.0), "hard": (0.0, 40.0)},
    "heist": {"easy": (3.5, 10.0), "hard": (2.0, 10.0)},
    "climber": {"easy": (2.0, 12.6), "hard": (1.0, 12.6)},
    "plunder": {"easy": (4.5, 30.0), "hard": (3.0, 30.0)},
    "ninja": {"easy": (3.5, 10.0), "hard": (2.0, 10.0)},
    "bossfight": {"easy": (0.5, 13.0), "hard": (0.5, 13.0)},
}


def normalized_score(game: str, mean_return: float, mode: str = "easy") -> float:
    """A mean return on `game` in distribution `mode` as Procgen's normalised score."""
    if game not in BOUNDS or mode not in BOUNDS[game]:
        raise ValueError(f"no Procgen bounds for {game!r} in mode {mode!r}; games: {', '.join(BOUNDS)}; "
                         "modes: easy, hard")
    low, high = BOUNDS[game][mode]
    return (mean_return - low) / (high - low)
