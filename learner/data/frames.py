"""Frame stacks: which past frames an observation holds, in one place for acting and training.

An observation is its env's newest `k` frames, channel-last [*frame, k], with zeros where a frame
would come from before the episode's first step (an episode start or a lost life: every `first`
step). Two sides build them and must agree frame for frame:

- acting (learner/slots.py) keeps one stack per env slot and pushes each step's new frame onto it
  (`push_frames`): one frame written per step;
- training data keeps single frames only, each stored once (R2D2's frame ring, V-trace's and PPO's
  unrolls with the k-1 frames before their first step, `history_before_last`), and `stack_frames`
  rebuilds the stacks from frames and `first` flags once, when a batch is formed.

tests/learner/data/test_frames.py checks that both give the same observations.
"""
from collections.abc import Sequence

import numpy as np

# An unroll's frames before its first step, [n, k-1, *frame]: what its first observation stacks
# besides its own frame (absent when k is 1).
HISTORY = "history"


def push_frames(stacks: np.ndarray, first: np.ndarray, frames: np.ndarray) -> None:
    """Pushes `frames` [n, *frame] onto `stacks` [n, *frame, k] in place, the oldest frame dropping
    out; a stack whose step is `first` [n] starts from zeros."""
    if not stacks.flags.c_contiguous:
        raise ValueError("push_frames shifts the stacks' memory in place: pass a C-contiguous array")
    stacks[first] = 0
    # Shifting the whole C-ordered array down one element moves every frame one place down its
    # stack (a memmove, ~20x faster than the strided `stacks[..., :-1] = stacks[..., 1:]`); the
    # newest position, which got the next pixel's oldest frame, is overwritten below.
    flat = stacks.reshape(-1)
    flat[:-1] = flat[1:]
    stacks[..., -1] = frames


def stack_frames(frames: np.ndarray, first: np.ndarray, k: int, history: np.ndarray | None = None,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Consecutive frames of one env per row, [n, S, *frame] as stored, their steps' `first` flags [n, S]
    and optionally the h frames before them, `history` [n, h, *frame] (no start among them) -> the
    stacked observations of the window's last h+S-k+1 steps, time-major [h+S-k+1, n, *frame, k] (into
    `out` when given). The history is read where it lies: the window is never concatenated."""
    h = 0 if history is None else history.shape[1]
    n = first.shape[0]
    steps = h + first.shape[1] - k + 1
    starts = np.concatenate([np.zeros((n, h), bool), first], axis=1) if h else first
    # A frame belongs to step j's stack iff no episode starts after it, up to step j.
    episode = np.cumsum(starts, axis=1)
    if out is None:
        out = np.empty((steps, n, *frames.shape[2:], k), frames.dtype)
    for c in range(k):  # channel c holds the frame k-1-c steps before the newest; k is a handful
        channel = out[..., c]
        from_history = max(0, min(steps, h - c))  # the steps whose channel-c frame predates `frames`
        if from_history:
            channel[:from_history] = np.swapaxes(history[:, c:c + from_history], 0, 1)
        channel[from_history:] = np.swapaxes(frames[:, c + from_history - h:c + steps - h], 0, 1)
        channel[(episode[:, c:c + steps] != episode[:, k - 1:]).T] = 0
    return out


def stack_unrolls(parts: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Groups of unrolls as the adder stored them ([n, T+1, ...] per step: single-frame `observation`
    and, for k > 1, their `history` [n, k-1, *frame]) as one training batch, time-major [T+1, B, ...]
    with B the groups' unrolls in order: the one copy from storage to the batch. Its observations are
    stacked as the policy saw them, [T+1, B, *frame, k]."""
    out = {name: np.concatenate([np.swapaxes(part[name], 0, 1) for part in parts], axis=1)
           for name in parts[0] if name not in (HISTORY, "observation")}
    if "observation" not in parts[0]:
        return out
    frames = parts[0]["observation"]
    history = parts[0].get(HISTORY)
    # The history is already zero where it predates the first step's episode: it counts as that
    # episode's (no start flagged), and a first step that starts an episode masks it anyway.
    k = 1 if history is None else history.shape[1] + 1
    size = sum(len(part["first"]) for part in parts)
    observation = np.empty((frames.shape[1], size, *frames.shape[2:], k), frames.dtype)
    row = 0
    for part in parts:
        n = len(part["first"])
        stack_frames(part["observation"], part["first"], k, part.get(HISTORY), out=observation[:, row:row + n])
        row += n
    out["observation"] = observation
    return out


def history_before_last(history: np.ndarray, frames: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The history of an unroll's last step, [n, k-1, *frame], from the unroll's `history` [n, k-1, *frame],
    single `frames` [n, T+1, *frame] and `first` flags [n, T+1]: its k-1 frames before the last
    step, zeros where they predate that step's episode (the last step's stack without its newest frame)."""
    k = history.shape[1] + 1
    short = frames.shape[1] < k  # the stack reaches back into the history
    last = stack_frames(frames[:, -k:], first[:, -k:], k, history[:, frames.shape[1] - 1:] if short else None)
    return np.moveaxis(last[0, ..., :-1], -1, 1)
