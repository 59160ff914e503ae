"""Adders: what turns the steps a policy acted on into an agent's training data, per env slot, and
hands it to the agent's data source. The inference thread calls `add` once per batch of steps, right
after the policy call, and `release` when an actor's envs leave; a data source that is full blocks
`add` (back-pressure), and closing the source (the learner stops) makes a waiting `add` raise
LearnerStopped, which ends the batch.

- `UnrollAdder`: unrolls of T steps plus the bootstrap step, onto a queue (V-trace, PPO), each frame
  stored once.
- `SequenceAdder`: overlapping sequences of frame positions into a sequence replay, each frame stored
  once (R2D2).
- `TransitionAdder`: single transitions (x, a, r, x', terminated) into a transition replay (SAC).
"""
import numpy as np

from learner.data import LearnerStopped
from learner.data.frames import HISTORY, history_before_last
from learner.data.sequence_replay import RateLimitedSampler
from learner.data.transitions import TransitionReplay
from learner.data.unrolls import UnrollQueue, UnrollStore

Fields = dict[str, tuple[tuple[int, ...], str]]  # name -> (per-step shape, dtype)


class UnrollAdder:
    """Each slot's steps as unrolls of `unroll_length` steps plus the one after the last (what the
    targets bootstrap from, which also begins the next unroll), put on `queue` when complete.

    `fields` name each step's fields (name -> per-step shape, dtype) with `observation` as one frame
    (the spec's observation shape), the env's own, as the step brought it: an unroll keeps single
    frames, [T+1, *frame], and the k-1 frames before its first step (`history`,
    learner/data/frames.py), and the data source stacks them when it forms a batch."""

    def __init__(self, max_slots: int, unroll_length: int, fields: Fields, queue: UnrollQueue,
                 num_stacked_frames: int = 1):
        self.store = UnrollStore(max_slots, unroll_length, fields)
        self.queue = queue
        frame_shape, dtype = fields["observation"]
        self._history_length = num_stacked_frames - 1
        # Per slot, the history of the unroll it is filling.
        self._history = np.zeros((max_slots, self._history_length, *frame_shape), dtype)
        self.unroll_fields: Fields = {name: ((unroll_length + 1, *shape), str(np.dtype(dtype)))
                                      for name, (shape, dtype) in fields.items()}
        if self._history_length:
            self.unroll_fields[HISTORY] = ((self._history_length, *frame_shape), str(np.dtype(dtype)))

    def add(self, slot_ids: np.ndarray, step: dict[str, np.ndarray]) -> None:
        if self._history_length:
            # A fresh slot's first step starts an episode: nothing before it is in its stack.
            self._history[slot_ids[self.store.positions(slot_ids) == 0]] = 0
        complete = self.store.append(slot_ids, step)
        if complete is None:
            return
        if self._history_length:
            done = self.store.completed_slots
            complete[HISTORY] = self._history[done]
            # The next unroll begins with this one's last step, and with that step's history.
            self._history[done] = history_before_last(complete[HISTORY], complete["observation"], complete["first"])
        if not self.queue.put(complete):
            raise LearnerStopped()

    def release(self, slot_ids: np.ndarray) -> None:
        self.store.reset(slot_ids)


class SequenceAdder:
    """Each slot's steps as sequences of history (K-1 frames) + burn-in + `unroll_length` + 1 steps,
    consecutive ones overlapping by all but `unroll_length`: the frames go to the replay's frame ring
    once, the sequences keep their positions (and the core state before the burn-in). Inserts wait
    while training lags the replay ratio by more than `max_lag_updates` batches (None: never)."""

    def __init__(self, max_slots: int, source: RateLimitedSampler, history: int, burn_in: int,
                 state_size: int, max_lag_updates: int | None):
        self.source, self.replay = source, source.replay
        self._history, self.max_lag_updates = history, max_lag_updates
        overlap = history + burn_in + 1
        self.store = UnrollStore(max_slots, self.replay.sequence_steps - overlap, {
            "frame_pos": ((), "int64"), "first": ((), "bool"), "terminated": ((), "bool"),
            "truncated": ((), "bool"), "reward": ((), "float32"), "action": ((), "int32"),
            "prev_action": ((), "int32"), "core_state": ((state_size,), "float32"),
        }, overlap=overlap, fresh_start=history)

    def add(self, slot_ids: np.ndarray, step: dict[str, np.ndarray], frames: np.ndarray) -> None:
        """`step` without its frames, which are `frames` (single, unstacked: [n, *frame])."""
        if not self.source.wait_for_training(self.max_lag_updates):
            raise LearnerStopped()
        complete = self.store.append(slot_ids, {**step, "frame_pos": self.replay.add_frames(frames)})
        if complete is not None:
            complete["core_state"] = complete["core_state"][:, self._history]  # state before the burn-in
            self.source.inserted(self.replay.insert(complete))

    def release(self, slot_ids: np.ndarray) -> None:
        self.store.reset(slot_ids)


class TransitionAdder:
    """Each slot's consecutive steps as transitions into `replay`: a step's observation and action with
    the next step's reward, observation and termination. A pair that starts at an episode's final
    observation spans a reset and is no transition."""

    def __init__(self, max_slots: int, fields: Fields, replay: TransitionReplay):
        # Two consecutive steps of one env per record: a transition and the step it lands on.
        self.store = UnrollStore(max_slots, 1, fields)
        self.replay = replay

    def add(self, slot_ids: np.ndarray, step: dict[str, np.ndarray]) -> None:
        """`step` holds observation, action, reward, terminated and truncated."""
        pairs = self.store.append(slot_ids, step)
        if pairs is None:
            return
        real = ~(pairs["terminated"][:, 0] | pairs["truncated"][:, 0])
        transitions = {"observation": pairs["observation"][real, 0], "action": pairs["action"][real, 0],
                       "reward": pairs["reward"][real, 1], "next_observation": pairs["observation"][real, 1],
                       "terminated": pairs["terminated"][real, 1]}
        if not self.replay.insert(transitions):
            raise LearnerStopped()

    def release(self, slot_ids: np.ndarray) -> None:
        self.store.reset(slot_ids)
