"""Atari through ale-py's native vector env, with SEED RL's preprocessing."""
import re

import gin
import numpy as np

from seed.envs import ActorEnvs, did_you_mean, register_family
from seed.settings import require_fraction, require_non_negative, require_positive
from seed.specs import TERMINATED_LIFE_LOST, EnvSpec


def ale_rom_id(game: str) -> str:
    """'Pong' / 'SpaceInvaders' / 'space_invaders' -> ale-py's ROM id."""
    from ale_py import roms
    rom_id = re.sub(r"(?<!^)(?=[A-Z])", "_", game.strip()).lower().replace("-", "_")
    known = roms.get_all_rom_ids()
    if rom_id not in known:
        guess = did_you_mean(rom_id, known, lambda rom: "".join(w.capitalize() for w in rom.split("_")))
        raise ValueError(f"unknown Atari game {game!r}{guess}: ale-py has no ROM {rom_id!r}. "
                         f"Use a name like 'Pong' or 'SpaceInvaders' (known: {', '.join(sorted(known)[:12])}, ...)")
    return rom_id


@register_family("atari")
@gin.configurable
def create_atari_envs(num_envs: int,
                      game: str = "Pong",
                      frame_skip: int = 4,
                      noop_max: int = 30,
                      max_pool: bool = True,
                      frame_size: int = 84,
                      repeat_action_probability: float = 0.0,
                      terminal_on_life_loss: bool = False,
                      max_episode_frames: int = 108_000,
                      full_action_space: bool = False,
                      fire_reset: bool = False,
                      num_threads: int = 1) -> ActorEnvs:
    """Atari through ale-py's native vector env with the standard preprocessing (the settings below).

    Rewards stay unclipped and frames unstacked: the learner does both.

    Settings:
        `game`: the game, as 'Pong', 'SpaceInvaders' or 'space_invaders' ('Pong'); the atari_*.gin configs
            bind it to the GAME macro.
        `frame_skip`: emulator frames per agent step, each repeating the action (4); every frame counter
            counts emulator frames. At 1 each step gives the current frame, not SEED RL's max-pool with a
            frozen first frame.
        `noop_max`: most no-op actions taken at each reset, a random number up to it (30); 0: none.
        `max_pool`: observe the pixel-wise max of each step's last two frames instead of its last frame (True).
        `frame_size`: height and width of the square grayscale observation, pixels (84).
        `repeat_action_probability`: chance that the emulator repeats the previous action instead of the
            new one (0.0); 0.25 is Machado et al.'s sticky actions (atari_vtrace_sticky.gin).
        `terminal_on_life_loss`: treat every lost life as terminal for learning (no bootstrap past it; the
            next step is a reset step, FIRE or NOOP) while the game goes on, and returns, episode counts
            and lengths stay whole games' (False). Not ale-py's `episodic_life`, which restarts the game
            at each lost life and so turns Breakout into a one-life game.
        `max_episode_frames`: emulator frames after which an episode is cut and reported as truncated
            (108000: 30 minutes at 60 frames/s).
        `full_action_space`: use all 18 Atari actions instead of the game's minimal set (False).
        `fire_reset`: take the FIRE action at each reset, and at the reset step after a lost life, in games
            that have one (False). Breakout waits for FIRE to serve each ball.
        `num_threads`: ale-py worker threads stepping this actor's envs (1: the actors' envs take one
            thread each and the OS shares the cores; 0 leaves it to ale-py).
    """
    # ale-py hangs on a frame size of 0 and takes a negative noop_max or a probability above 1.
    require_positive("create_atari_envs", frame_skip=frame_skip, frame_size=frame_size)
    require_non_negative("create_atari_envs", noop_max=noop_max, max_episode_frames=max_episode_frames,
                         num_threads=num_threads)
    require_fraction("create_atari_envs", repeat_action_probability=repeat_action_probability)
    from ale_py.vector_env import AtariVectorEnv
    env = AtariVectorEnv(
        ale_rom_id(game), num_envs, num_threads=num_threads, batch_size=num_envs,
        max_num_frames_per_episode=max_episode_frames,
        repeat_action_probability=repeat_action_probability,
        full_action_space=full_action_space, autoreset_mode="NextStep",
        img_height=frame_size, img_width=frame_size, grayscale=True, stack_num=1,
        frameskip=frame_skip, maxpool=max_pool, noop_max=noop_max,
        reward_clipping=False, use_fire_reset=fire_reset)
    spec = EnvSpec((frame_size, frame_size), "uint8", int(env.single_action_space.n), frame_skip)
    if not terminal_on_life_loss:
        return ActorEnvs(env, spec)
    from ale_py import Action
    action_set = list(env.ale.get_action_set())
    restart = action_set.index(Action.FIRE) if fire_reset and Action.FIRE in action_set else 0  # 0: NOOP
    return LifeLossEnvs(env, spec, restart)


class LifeLossEnvs(ActorEnvs):
    """Atari envs whose lost lives end an episode for learning but not the game.

    A life counts as lost when the emulator's lives go down on a step that neither ends nor cuts off the
    game (ale-py's own `life_loss_info` flag hides a cut-off behind the lost life on the frame-limit step,
    and some games end at one life or leave a last life uncounted). The learner starts afresh after it
    (frame stack, recurrent state, no bootstrap) as after any end, so the next step must be a reset step,
    which ignores its action: the envs that lost a life take `restart_action` there.
    """

    def __init__(self, vector_env, spec: EnvSpec, restart_action: int):
        super().__init__(vector_env, spec)
        self._restart_action = restart_action
        self._life_lost = np.zeros(self.num_envs, bool)
        self._lives = np.zeros(self.num_envs, np.int64)

    def reset(self, seed=None):
        observations, info = self._env.reset(seed=seed)
        self._life_lost[:] = False
        self._lives = np.asarray(info["lives"], np.int64)
        return self._observations(observations)

    def _actions(self, actions):
        if self._life_lost.any():  # rare: most steps pass the actions through uncopied
            actions = actions.copy()
            actions[self._life_lost] = self._restart_action
        return actions

    def _terminated_codes(self, terminated, truncated, info):
        lives = np.asarray(info["lives"], np.int64)
        self._life_lost = (lives < self._lives) & ~terminated & ~truncated
        self._lives = lives  # a reset step's lives are the new game's
        codes = terminated.astype(np.uint8)
        codes[self._life_lost] = TERMINATED_LIFE_LOST
        return codes
