"""Procgen (Cobbe et al. 2020), the generalisation benchmark, through envpool's C++ port (the
`procgen` extra, with the `football` one's envpool 1.2.5; Procgen also needs the system's Qt 5
runtime: apt install libqt5gui5 on Debian and Ubuntu).

Observations are 64 x 64 RGB frames, unstacked by default as Procgen's published agents see them;
actions are the full 15. Levels are drawn from `num_levels` seeds starting at `start_level` (0: the
unlimited set, the protocol of OpenAI's train-procgen numbers quoted in docs/envs.md), in the easy
or hard distribution. No frame skip: a frame is an agent step."""
import gin

from seed.envs import register_family, unknown_name
from seed.envs.pools import PoolEnvs, envpool_module

GAMES = ("bigfish", "bossfight", "caveflyer", "chaser", "climber", "coinrun", "dodgeball", "fruitbot", "heist",
         "jumper", "leaper", "maze", "miner", "ninja", "plunder", "starpilot")
DISTRIBUTION_MODES = ("easy", "hard")


@register_family("procgen")
@gin.configurable
def create_procgen_envs(num_envs: int, game: str = "starpilot", distribution_mode: str = "easy", num_levels: int = 0,
                        start_level: int = 0, num_threads: int = 1) -> PoolEnvs:
    """`num_envs` Procgen envs of one game, stepped together in one process.

    Settings:
        `game`: one of the 16 games: 'starpilot', 'bigfish', 'coinrun', 'fruitbot', ... ('starpilot');
            procgen_*.gin bind it to the GAME macro.
        `distribution_mode`: 'easy' or 'hard' level generation ('easy').
        `num_levels`: how many level seeds the envs draw from (0: unlimited).
        `start_level`: the first of those level seeds (0); a test set is another range of seeds.
        `num_threads`: envpool worker threads stepping this actor's envs (1: the actors share the cores).
    """
    if game not in GAMES:
        raise unknown_name("Procgen game", game, list(GAMES))
    if distribution_mode not in DISTRIBUTION_MODES:
        raise ValueError(f"create_procgen_envs.distribution_mode={distribution_mode!r}; use 'easy' or 'hard'")
    if num_levels < 0 or start_level < 0 or num_threads < 0:
        raise ValueError(f"create_procgen_envs: num_levels={num_levels}, start_level={start_level} and "
                         f"num_threads={num_threads} must not be negative")
    envpool = envpool_module("Procgen", "procgen")
    task = f"{game.capitalize()}{distribution_mode.capitalize()}-v0"

    def make(seed):
        try:
            return envpool.make(task, env_type="gymnasium", num_envs=num_envs, seed=seed, channel_first=False,
                                num_levels=num_levels, start_level=start_level, num_threads=num_threads)
        except ImportError as e:  # envpool's Procgen loads Qt 5 when a pool is first made
            raise ValueError(f"Procgen needs the system's Qt 5 runtime: apt install libqt5gui5 (Debian, Ubuntu) "
                             f"({str(e).splitlines()[0]})") from e

    return PoolEnvs(make)
