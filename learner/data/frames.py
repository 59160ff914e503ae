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


def stack_frames(frames: np.ndarray, first: np.ndarray, k: int) -> np.ndarray:
    """[B, S, *frame] consecutive frames of one env per row and their steps' `first` flags [B, S] ->
    the stacked observations of the last S-k+1 steps, [B, S-k+1, *frame, k]."""
    steps = frames.shape[1] - k + 1
    # A frame belongs to step j's stack iff no episode starts after it, up to step j.
    episode = np.cumsum(first, axis=1)
    stacked = np.empty((frames.shape[0], steps, *frames.shape[2:], k), frames.dtype)
    for c in range(k):  # channel c holds the frame k-1-c steps before the newest; k is a handful
        channel = stacked[..., c]
        channel[...] = frames[:, c:c + steps]
        channel[episode[:, c:c + steps] != episode[:, k - 1:]] = 0
    return stacked


def stack_unrolls(unrolls: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Unrolls as the adder stored them (single-frame `observation` [n, T+1, *frame] and, for k > 1,
    their `history` [n, k-1, *frame]) with the observations stacked as the policy saw them,
    [n, T+1, *frame, k]; the other fields are the same arrays."""
    out = dict(unrolls)
    history = out.pop(HISTORY, None)
    frames, first = out["observation"], out["first"]
    if history is None:
        out["observation"] = frames[..., None]
        return out
    # The history is already zero where it predates the first step's episode: it counts as that
    # episode's (no start flagged), and a first step that starts an episode masks it anyway.
    k = history.shape[1] + 1
    out["observation"] = stack_frames(np.concatenate([history, frames], axis=1),
                                      np.concatenate([np.zeros((len(first), k - 1), bool), first], axis=1), k)
    return out


def history_before_last(history: np.ndarray, frames: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The history of an unroll's last step, [n, k-1, *frame], from the unroll's `history` [n, k-1, *frame],
    single `frames` [n, T+1, *frame] and `first` flags [n, T+1]: its k-1 frames before the last
    step, zeros where they predate that step's episode."""
    k = history.shape[1] + 1
    window = np.concatenate([history, frames], axis=1)[:, -k:]
    starts = np.concatenate([np.zeros((len(first), k - 1), bool), first], axis=1)[:, -k:]
    episode = np.cumsum(starts, axis=1)
    kept = episode[:, :-1] == episode[:, -1:]
    return window[:, :-1] * kept.reshape(kept.shape + (1,) * (frames.ndim - 2)).astype(frames.dtype)
