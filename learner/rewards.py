"""Reward clipping, applied once by the learner as steps arrive (actors always
send raw rewards, which the learner keeps for reporting returns)."""
import numpy as np

REWARD_CLIPPING_MODES = ("none", "abs_one", "soft_asymmetric")


def check_reward_clipping(mode: str) -> str:
    if mode not in REWARD_CLIPPING_MODES:
        raise ValueError(f"unknown reward_clipping {mode!r}; use one of {REWARD_CLIPPING_MODES}")
    return mode


def clip_rewards(rewards: np.ndarray, mode: str) -> np.ndarray:
    rewards = np.asarray(rewards, np.float32)
    if mode == "abs_one":
        return np.clip(rewards, -1.0, 1.0)
    if mode == "soft_asymmetric":
        # IMPALA's Atari variant: squash into (-5, 5), shrink negative rewards more.
        squeezed = np.tanh(rewards / 5.0)
        return np.where(rewards < 0, 0.3 * squeezed, squeezed).astype(np.float32) * np.float32(5.0)
    check_reward_clipping(mode)
    return rewards
