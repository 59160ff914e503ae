"""Prioritised sequence replay for R2D2, with every frame stored once.

Single frames live in one ring (learner/data/frames.py's `FrameRing`); a stored sequence keeps, per
step, the ring position of that step's frame and a few scalars, and rebuilds
the stacked observations when sampled. Consecutive sequences of a slot overlap
by their burn-in, but only their positions are repeated, never the frames.
Priorities live in a sum tree, so sampling and updates cost O(log N).
"""
import logging
import threading
import time
from typing import NamedTuple

import numpy as np

from learner.data import Closable, RateLimit, deadline_after
from learner.data.frames import FrameRing, stack_frames
from learner.data.saved_state import ArraySidecar
from learner.data.sum_tree import Priorities

log = logging.getLogger(__name__)

# Per-step scalars a sequence keeps besides its frame positions.
STEP_FIELDS = {"first": "bool", "terminated": "bool", "truncated": "bool", "reward": "float32",
               "action": "int32", "prev_action": "int32"}


class SampledBatch(NamedTuple):
    keys: np.ndarray  # [B] the sampled sequences' keys, for update_priorities
    indices: np.ndarray  # [B] where they sit in the replay
    weights: np.ndarray  # [B] importance-sampling weights, max 1
    sequences: dict[str, np.ndarray]  # [B, L, ...], observation stacked [B, L, *frame, K]


def sequence_bytes(sequence_steps: int, state_size: int) -> int:
    """Bytes one stored sequence costs besides frames."""
    per_step = 8 + sum(np.dtype(d).itemsize for d in STEP_FIELDS.values())  # its frame's position and fields
    return sequence_steps * per_step + 4 * state_size + 8 + 8 + 8  # core state, oldest frame, key, priority


class SequenceReplay:
    """Sequences of `sequence_steps` = history (K-1) + burn-in + unroll + 1 steps."""

    def __init__(self, capacity_sequences: int, sequence_steps: int, new_steps_per_sequence: int,
                 frame_shape: tuple[int, ...], frame_dtype: str, num_stacked_frames: int, state_size: int,
                 priority_exponent: float = 0.9, importance_exponent: float = 0.6,
                 frame_slack: float = 0.125, seed: int | None = None):
        self.capacity = capacity_sequences
        self.sequence_steps = sequence_steps
        self.new_steps_per_sequence = new_steps_per_sequence
        self.num_stacked_frames = num_stacked_frames
        self.beta = importance_exponent
        frame_capacity = int(capacity_sequences * new_steps_per_sequence * (1 + frame_slack)) + sequence_steps
        self.ring = FrameRing(frame_capacity, frame_shape, frame_dtype)
        self.frame_pos = np.zeros((capacity_sequences, sequence_steps), np.int64)
        self.steps = {k: np.zeros((capacity_sequences, sequence_steps), d) for k, d in STEP_FIELDS.items()}
        self.core_state = np.zeros((capacity_sequences, state_size), np.float32)
        self.oldest_frame = np.zeros(capacity_sequences, np.int64)
        # Each stored sequence's key: its insert number times the capacity plus its index, so a key names
        # one sequence and where it sits; priorities come back by key, and a key whose place a newer
        # sequence took is ignored.
        self.keys = np.full(capacity_sequences, -1, np.int64)
        self.priorities = Priorities(capacity_sequences, priority_exponent)
        self.size = 0
        self._next = 0
        self.num_inserted = 0
        self.num_dropped = 0
        self._next_scan = 0
        self._rng = np.random.default_rng(seed)
        self.lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        arrays = [self.ring.frames, self.frame_pos, self.core_state, self.oldest_frame, self.keys, *self.steps.values()]
        return sum(a.nbytes for a in arrays)

    # Counters that, with the arrays, make a loaded replay continue exactly where the saved one was.
    _COUNTERS = ("size", "_next", "num_inserted", "num_dropped", "_next_scan")

    def state(self) -> dict[str, np.ndarray]:
        """The replay as named arrays, for saving it with a checkpoint; hold `lock` while using them."""
        arrays = {"ring_frames": self.ring.frames, "ring_written": np.asarray(self.ring.written),
                  "frame_pos": self.frame_pos, "core_state": self.core_state, "oldest_frame": self.oldest_frame,
                  "keys": self.keys,
                  **self.priorities.state()}
        arrays.update({f"steps_{k}": v for k, v in self.steps.items()})
        arrays.update({f"counter{k}": np.asarray(getattr(self, k)) for k in self._COUNTERS})
        return arrays

    def load_state(self, arrays) -> None:
        """Puts back what `state` returned; a replay built with other sizes is refused, naming the field."""
        mine = self.state()
        for name, value in mine.items():
            if name not in arrays:
                raise ValueError(f"saved replay has no {name!r}; it was written by another version")
            if arrays[name].shape != value.shape or arrays[name].dtype != value.dtype:
                raise ValueError(f"saved replay's {name} is {arrays[name].dtype}{list(arrays[name].shape)}, this "
                                 f"run's is {value.dtype}{list(value.shape)}: the replay settings changed since it "
                                 "was saved; restore them, or set checkpoint_replay=False to start with an empty "
                                 "replay")
        with self.lock:
            for name in ("ring_frames", "frame_pos", "core_state", "oldest_frame", "keys"):
                mine[name][...] = arrays[name]
            for k in self.steps:
                self.steps[k][...] = arrays[f"steps_{k}"]
            self.priorities.load_state(arrays)
            self.ring.written = int(arrays["ring_written"])
            for k in self._COUNTERS:
                setattr(self, k, type(getattr(self, k))(arrays[f"counter{k}"]))

    def add_frames(self, frames: np.ndarray) -> np.ndarray:
        with self.lock:
            positions = self.ring.add(frames)
            self._evict_overwritten()
        return positions

    def _horizon(self) -> int:
        """Sequences whose oldest frame is older than this may lose it before the next scan."""
        return self.ring.written + self.ring.capacity // 8 - self.ring.capacity

    def _evict_overwritten(self) -> None:
        # Amortised: one vectorised scan per 1/16 of the ring written.
        if self.ring.written < self._next_scan:
            return
        self._next_scan = self.ring.written + max(1, self.ring.capacity // 16)
        stale = (self.oldest_frame < self._horizon()) & self.priorities.drawable(np.arange(self.capacity))
        if stale.any():
            self.priorities.remove(np.flatnonzero(stale))

    def insert(self, sequences: dict[str, np.ndarray]) -> None:
        """Adds complete sequences ([n, sequence_steps] fields, `frame_pos` and `core_state`)."""
        with self.lock:
            oldest = sequences["frame_pos"].min(axis=1)
            keep = oldest >= self._horizon()
            self.num_dropped += int((~keep).sum())
            n = int(keep.sum())
            if n == 0:
                return
            index = (self._next + np.arange(n)) % self.capacity
            self.frame_pos[index] = sequences["frame_pos"][keep]
            for k in STEP_FIELDS:
                self.steps[k][index] = sequences[k][keep]
            self.core_state[index] = sequences["core_state"][keep]
            self.oldest_frame[index] = oldest[keep]
            self.keys[index] = (self.num_inserted + np.arange(n)) * self.capacity + index
            self.priorities.insert(index)
            self._next = (self._next + n) % self.capacity
            self.size = min(self.size + n, self.capacity)
            self.num_inserted += n

    def sample(self, batch_size: int) -> SampledBatch:
        with self.lock:
            indices = self.priorities.sample(batch_size, self._rng)
            probabilities = self.priorities.probabilities(indices)
            weights = (self.size * np.maximum(probabilities, 1e-12)) ** -self.beta
            sequences = {k: v[indices] for k, v in self.steps.items()}
            sequences["core_state"] = self.core_state[indices]
            frames = self.ring.gather(self.frame_pos[indices])
        sequences["observation"] = stack_frames(frames, sequences["first"], self.num_stacked_frames)
        k = self.num_stacked_frames - 1
        for name in STEP_FIELDS:
            sequences[name] = sequences[name][:, k:]
        return SampledBatch(self.keys[indices], indices, (weights / weights.max()).astype(np.float32), sequences)

    def update_priorities(self, keys: np.ndarray, priorities: np.ndarray) -> None:
        """Priorities for the sequences `keys` name (SampledBatch.keys); one that was overwritten or evicted
        since it was sampled keeps out of it. A tiny floor keeps every live sequence drawable."""
        keys = np.asarray(keys, np.int64)
        indices = keys % self.capacity
        with self.lock:
            current = (self.keys[indices] == keys) & self.priorities.drawable(indices)
            self.priorities.update(indices, np.maximum(priorities, 1e-6), where=current)


class RateLimitedSampler(Closable):
    """The data source of R2D2: batches from a SequenceReplay, as its RateLimit allows: it waits for
    the minimum fill and for inserts to keep the replay ratio (both counted in sequences). The
    inference thread calls `inserted()` after each insert to wake it. With `checkpoint` the replay
    and the ratio's counter are saved beside every checkpoint."""

    def __init__(self, replay: SequenceReplay, batch_size: int, rate: RateLimit, checkpoint: bool = False):
        super().__init__()
        self.replay, self.batch_size, self.rate, self.checkpoint = replay, batch_size, rate, checkpoint
        self.sampled = 0  # sequences handed out (the replay ratio counts them)
        self._counted_inserts = 0
        self._last_rates = (time.monotonic(), 0, 0)

    def inserted(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def take_inserted(self) -> int:
        """Sequences inserted since the last call (a restored replay's are not new)."""
        inserted = self.replay.num_inserted
        new, self._counted_inserts = inserted - self._counted_inserts, inserted
        return new

    def _ready(self) -> bool:
        return self.rate.allows(self.replay.size, self.replay.num_inserted, self.sampled, self.batch_size)

    def updates_owed(self) -> float:
        """Batches the replay ratio allows that training has not taken yet (0 before the minimum fill)."""
        if self.rate.samples_per_insert is None or not self.rate.filled(self.replay.size):
            return 0.0
        return (self.rate.samples_per_insert * self.replay.num_inserted - self.sampled) / self.batch_size

    def wait_for_training(self, max_lag_updates: int | None) -> bool:
        """The other direction of the ratio, for the inference thread before it inserts: waits while
        training is more than `max_lag_updates` batches behind it (None: never), so a slow learner slows
        the actors instead of training less per env step. False once the source is closed."""
        if self._closed:
            return False
        if max_lag_updates is None or self.updates_owed() <= max_lag_updates:  # the usual case: no lock per step
            return True
        with self._cond:
            return self._wait(lambda: self.updates_owed() <= max_lag_updates)

    def next_batch(self, timeout_s: float | None = None) -> SampledBatch | None:
        with self._cond:
            if not self._wait(self._ready, deadline_after(timeout_s)):
                return None
            self.sampled += self.batch_size
            self._cond.notify_all()  # an insert waiting for training may go on
        return self.replay.sample(self.batch_size)

    def metrics(self) -> dict[str, float]:
        """Fill, drops, the updates the ratio owes, and the insert and sample rates in agent steps/s
        since the last call."""
        steps = self.replay.new_steps_per_sequence
        now, inserted, sampled = time.monotonic(), self.replay.num_inserted * steps, self.sampled * steps
        last_time, last_inserted, last_sampled = self._last_rates
        elapsed = max(now - last_time, 1e-9)
        self._last_rates = (now, inserted, sampled)
        return {"replay/size_sequences": self.replay.size, "replay/dropped_sequences": self.replay.num_dropped,
                "replay/updates_owed": self.updates_owed(),
                "replay/insert_steps_per_second": (inserted - last_inserted) / elapsed,
                "replay/sample_steps_per_second": (sampled - last_sampled) / elapsed}

    def describe(self) -> str:
        return f"replay {self.replay.size}/{self.replay.capacity} sequences"

    def checkpoint_sidecars(self) -> dict[str, object]:
        if not self.checkpoint:
            return {}
        # The replay and the replay-ratio counter; inserts wait while they are written.
        return {"replay": ArraySidecar(
            self.replay.lock, lambda: dict(self.replay.state(), sampled_sequences=np.asarray(self.sampled)),
            self._load_saved, lambda: self.replay.nbytes + self.replay.priorities.tree.nodes.nbytes)}

    def _load_saved(self, arrays) -> None:
        self.replay.load_state(arrays)
        self.sampled = int(arrays["sampled_sequences"])
        self._counted_inserts = self.replay.num_inserted  # restored sequences are not new frames
        log.info("restored a replay of %d sequences (%d inserted so far)", self.replay.size,
                 self.replay.num_inserted)
