"""Google Research Football as SEED RL trains it, through envpool's C++ port of the engine (the
`football` extra: .venv/bin/pip install -e '.[football]' in the checkout; envpool 1.2.5, Python 3.11).

SEED RL's observation: the super mini-map (SMM), four 72 x 96 uint8 planes (left team, right team,
ball, active player), which the learner stacks 4 deep; the default set of 19 actions; one player
controlled. envpool's port scores +1 and -1 for goals and nothing else: it has no `checkpoints`
reward. With `rewards='scoring,checkpoints'` this family adds one from what the port exposes, the
SMM and the ball's owner: 0.1 for each of ten distances to the opponents' goal that the ball,
carried by our controlled player, first comes within in an episode, and the rest at a goal, as
gfootball's checkpoint reward does. The ball's position is read off the mini-map (a pixel is about
0.02 of the pitch's length), so it is an approximation of that reward, not the engine's own.

Envs come from one envpool pool per actor (seed/envs/pools.py)."""
import gin
import numpy as np

from seed.envs import register_family, unknown_name
from seed.envs.pools import PoolEnvs, envpool_module

SCENARIOS = (
    "11_vs_11_easy_stochastic", "11_vs_11_stochastic", "11_vs_11_hard_stochastic", "11_vs_11_competition",
    "11_vs_11_kaggle", "1_vs_1_easy", "5_vs_5", "academy_empty_goal_close", "academy_empty_goal",
    "academy_run_to_score", "academy_run_to_score_with_keeper", "academy_pass_and_shoot_with_keeper",
    "academy_run_pass_and_shoot_with_keeper", "academy_3_vs_1_with_keeper", "academy_corner",
    "academy_counterattack_easy", "academy_counterattack_hard", "academy_single_goal_versus_lazy",
)
REWARDS = ("scoring", "scoring,checkpoints")
NUM_CHECKPOINTS, CHECKPOINT_REWARD = 10, 0.1
BALL, ACTIVE = 2, 3  # the SMM's planes
# The mini-map spans x in [-1, 1] and y in [-1/2.25, 1/2.25] of the pitch (gfootball's SMM bounds).
PITCH_Y = 1 / 2.25


class CheckpointReward:
    """gfootball's checkpoint reward from the SMM and the ball's owner, per env of a pool."""

    def __init__(self, num_envs: int):
        self._collected = np.zeros(num_envs, np.int64)

    def reset(self) -> None:
        """Every env starts a new episode (a pool reset)."""
        self._collected[:] = 0

    def __call__(self, observations: np.ndarray, scoring: np.ndarray, ball_owned_team: np.ndarray,
                 first: np.ndarray) -> np.ndarray:
        """The reward of each env's step: its scoring reward plus the checkpoints it collected."""
        self._collected[first] = 0
        extra = np.zeros(len(scoring), np.float32)
        goals = scoring >= 1  # a goal collects every checkpoint not yet collected
        extra[goals] = CHECKPOINT_REWARD * (NUM_CHECKPOINTS - self._collected[goals])
        self._collected[goals] = NUM_CHECKPOINTS
        for i in np.flatnonzero((ball_owned_team == 0) & ~first & ~goals):
            distance = self._distance_to_goal(observations[i])
            if distance is None:
                continue
            # The n-th checkpoint lies at a distance of 0.99 - 0.8 n / 9 from the goal's centre.
            reached = int(np.sum(distance <= 0.99 - 0.8 / (NUM_CHECKPOINTS - 1) * np.arange(NUM_CHECKPOINTS)))
            if reached > self._collected[i]:
                extra[i] = CHECKPOINT_REWARD * (reached - self._collected[i])
                self._collected[i] = reached
        return scoring + extra

    @staticmethod
    def _distance_to_goal(smm: np.ndarray) -> float | None:
        """The ball's distance to the right goal's centre (1, 0), when our controlled player carries it."""
        ball = np.argwhere(smm[..., BALL])
        active = np.argwhere(smm[..., ACTIVE])
        if not len(ball) or not len(active) or np.abs(active - ball[0]).max(axis=1).min() > 1:
            return None  # no ball on the map, or a team-mate other than the controlled one holds it
        height, width = smm.shape[:2]
        y_px, x_px = ball[0]
        x = (x_px + 0.5) / width * 2 - 1
        y = ((y_px + 0.5) / height * 2 - 1) * PITCH_Y
        return float(np.hypot(x - 1, y))


class FootballEnvs(PoolEnvs):
    def __init__(self, num_envs: int, scenario: str, rewards: str, num_threads: int):
        envpool = envpool_module("Google Research Football", "football")
        super().__init__(lambda seed: envpool.make(f"gfootball/{scenario}-v1", env_type="gymnasium",
                                                   num_envs=num_envs, seed=seed, num_threads=num_threads))
        self._checkpoints = CheckpointReward(num_envs) if rewards == "scoring,checkpoints" else None
        self._first = np.zeros(num_envs, bool)  # the envs whose step is their reset step (the last one ended)

    def reset(self, seed: int | None = None) -> np.ndarray:
        if self._checkpoints is not None:
            self._checkpoints.reset()
        self._first[:] = False
        return super().reset(seed)

    def _rewards(self, rewards, observations, ended, info):
        first, self._first = self._first, ended
        if self._checkpoints is None:
            return rewards
        return self._checkpoints(observations, rewards, np.asarray(info["ball_owned_team"]), first)


@register_family("football")
@gin.configurable
def create_football_envs(num_envs: int, scenario: str = "11_vs_11_easy_stochastic", rewards: str = "scoring",
                         num_threads: int = 1) -> FootballEnvs:
    """`num_envs` Google Research Football games of one scenario, stepped together in one process.

    Settings:
        `scenario`: a gfootball scenario: '11_vs_11_easy_stochastic' (SEED RL's), 'academy_empty_goal_close',
            'academy_3_vs_1_with_keeper' and the other academy ones, '5_vs_5', ... ('11_vs_11_easy_stochastic');
            football_*.gin bind it to the GAME macro.
        `rewards`: 'scoring' (+1 and -1 for goals, envpool's port's only reward) or 'scoring,checkpoints'
            (SEED RL's, with the checkpoints read off the mini-map, an approximation) ('scoring').
        `num_threads`: envpool worker threads stepping this actor's envs (1: the actors share the cores).
    """
    if scenario not in SCENARIOS:
        raise unknown_name("football scenario", scenario, list(SCENARIOS))
    if rewards not in REWARDS:
        raise ValueError(f"create_football_envs.rewards={rewards!r}; use 'scoring' or 'scoring,checkpoints'")
    if num_threads < 0:
        raise ValueError(f"create_football_envs.num_threads={num_threads}; use 1 or more (0: envpool's choice)")
    return FootballEnvs(num_envs, scenario, rewards, num_threads)
