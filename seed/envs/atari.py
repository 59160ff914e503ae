"""Atari through ale-py's native vector env, with SEED RL's preprocessing."""
import re

import gin

from seed.envs import ActorEnvs, register_family
from seed.settings import require_fraction, require_non_negative, require_positive
from seed.specs import EnvSpec


def ale_rom_id(game: str) -> str:
    """'Pong' / 'SpaceInvaders' / 'space_invaders' -> ale-py's ROM id."""
    from ale_py import roms
    rom_id = re.sub(r"(?<!^)(?=[A-Z])", "_", game.strip()).lower().replace("-", "_")
    known = roms.get_all_rom_ids()
    if rom_id not in known:
        raise ValueError(f"unknown Atari game {game!r}: ale-py has no ROM {rom_id!r}. "
                         f"Use a name like 'Pong' or 'SpaceInvaders' (known: {', '.join(sorted(known)[:12])}, ...)")
    return rom_id


@register_family("atari", game_parameter="create_atari_envs.game")
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
    """Atari through ale-py's native vector env with the standard preprocessing.

    Grayscale `frame_size`^2 frames, max-pooled over the last two of each
    `frame_skip`, up to `noop_max` no-ops at reset, an episode cut at
    `max_episode_frames` reported as truncation. Rewards stay unclipped and
    frames unstacked: the learner does both.
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
        episodic_life=terminal_on_life_loss, reward_clipping=False, use_fire_reset=fire_reset)
    spec = EnvSpec((frame_size, frame_size), "uint8", int(env.single_action_space.n), frame_skip)
    return ActorEnvs(env, spec)
