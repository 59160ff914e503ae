"""Prioritised sequence replay for R2D2, with every frame stored once.

Single frames live in one ring (learner/data/ring.py); a stored sequence keeps, per
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

from learner.data import Closable, RateLimit, RateLimiter, deadline_after
from learner.data.frames import stack_frames
from learner.data.ring import ArrayRing
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
    sequences: dict[str, np.ndarray]  # time-major [L, B, ...], observation stacked [L, B, *frame, K]; core_state [B, S]


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
        self.frames = ArrayRing(frame_capacity, {"frame": (frame_shape, frame_dtype)})
        # Per sequence: its frames' positions in `frames`, its steps' fields, the core state before its
        # burn-in, its oldest frame and its key: its insert number times the capacity plus its row, so
        # a key names one sequence and where it sits; priorities come back by key, and a key whose row
        # a newer sequence took is ignored.
        self.sequences = ArrayRing(capacity_sequences, {
            "frame_pos": ((sequence_steps,), "int64"), **{k: ((sequence_steps,), d) for k, d in STEP_FIELDS.items()},
            "core_state": ((state_size,), "float32"), "oldest_frame": ((), "int64"), "key": ((), "int64")})
        self.sequences.arrays["key"][:] = -1
        self.priorities = Priorities(capacity_sequences, priority_exponent)
        self.num_dropped = 0
        self._next_scan = 0
        self._rng = np.random.default_rng(seed)
        self.lock = threading.Lock()

    @property
    def size(self) -> int:
        return len(self.sequences)

    @property
    def num_inserted(self) -> int:
        return self.sequences.written

    @property
    def keys(self) -> np.ndarray:
        return self.sequences.arrays["key"]

    @property
    def nbytes(self) -> int:
        return self.frames.nbytes + self.sequences.nbytes

    # Counters that, with the rings, make a loaded replay continue exactly where the saved one was.
    _COUNTERS = ("num_dropped", "_next_scan")

    def state(self) -> dict[str, np.ndarray]:
        """The replay as named arrays, for saving it with a checkpoint; hold `lock` while using them."""
        return {**self.frames.state("frames/"), **self.sequences.state("sequences/"), **self.priorities.state(),
                **{f"counter{k}": np.asarray(getattr(self, k)) for k in self._COUNTERS}}

    def load_state(self, arrays) -> None:
        """Puts back what `state` returned; a replay built with other sizes is refused, naming the field."""
        self.frames.check_state(arrays, "frames/")
        self.sequences.check_state(arrays, "sequences/")
        with self.lock:
            self.frames.load_state(arrays, "frames/")
            self.sequences.load_state(arrays, "sequences/")
            self.priorities.load_state(arrays)
            for k in self._COUNTERS:
                setattr(self, k, int(arrays[f"counter{k}"]))

    def add_frames(self, frames: np.ndarray) -> np.ndarray:
        with self.lock:
            positions = self.frames.add({"frame": frames})
            self._evict_overwritten()
        return positions

    def _horizon(self) -> int:
        """Sequences whose oldest frame is older than this may lose it before the next scan."""
        return self.frames.written + self.frames.capacity // 8 - self.frames.capacity

    def _evict_overwritten(self) -> None:
        # Amortised: one vectorised scan per 1/16 of the ring written.
        if self.frames.written < self._next_scan:
            return
        self._next_scan = self.frames.written + max(1, self.frames.capacity // 16)
        oldest = self.sequences.arrays["oldest_frame"]
        stale = (oldest < self._horizon()) & self.priorities.drawable(np.arange(self.capacity))
        if stale.any():
            self.priorities.remove(np.flatnonzero(stale))

    def insert(self, sequences: dict[str, np.ndarray]) -> int:
        """Adds complete sequences ([n, sequence_steps] fields, `frame_pos` and `core_state`); returns how
        many it kept (one whose oldest frame is about to be overwritten is dropped)."""
        with self.lock:
            oldest = sequences["frame_pos"].min(axis=1)
            keep = oldest >= self._horizon()
            self.num_dropped += int((~keep).sum())
            n = int(keep.sum())
            if n == 0:
                return 0
            numbers = self.sequences.written + np.arange(n)
            kept = {k: sequences[k][keep] for k in ("frame_pos", "core_state", *STEP_FIELDS)}
            rows = self.sequences.rows(self.sequences.add({
                **kept, "oldest_frame": oldest[keep], "key": numbers * self.capacity + numbers % self.capacity}))
            self.priorities.insert(rows)
        return n

    def sample(self, batch_size: int) -> SampledBatch:
        with self.lock:
            indices = self.priorities.sample(batch_size, self._rng)
            probabilities = self.priorities.probabilities(indices)
            weights = (self.size * np.maximum(probabilities, 1e-12)) ** -self.beta
            sequences = self.sequences.gather(indices)
            frames = self.frames.gather(sequences.pop("frame_pos"))["frame"]
        keys = sequences.pop("key")
        del sequences["oldest_frame"]
        sequences["observation"] = stack_frames(frames, sequences["first"], self.num_stacked_frames)
        k = self.num_stacked_frames - 1
        for name in STEP_FIELDS:  # time-major, as the observations
            sequences[name] = np.ascontiguousarray(np.swapaxes(sequences[name][:, k:], 0, 1))
        return SampledBatch(keys, indices, (weights / weights.max()).astype(np.float32), sequences)

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
    the minimum fill and for inserts to keep the replay ratio (both counted in sequences, from zero:
    learner.data.RateLimiter). The inference thread calls `inserted(n)` after each insert to count
    them and wake it. With `checkpoint` the replay and the ratio's counts are saved beside every
    checkpoint."""

    def __init__(self, replay: SequenceReplay, batch_size: int, rate: RateLimit, checkpoint: bool = False):
        super().__init__()
        self.replay, self.batch_size, self.checkpoint = replay, batch_size, checkpoint
        self.limiter = RateLimiter(rate, batch_size)
        self._last_rates = (time.monotonic(), 0, 0)

    def inserted(self, n: int) -> None:
        with self._cond:
            self.limiter.add_inserted(n, self.replay.size)
            self._cond.notify_all()

    def take_inserted(self) -> int:
        """Sequences inserted since the last call (a restored replay's are not new)."""
        with self._cond:
            return self.limiter.take_inserted()

    def updates_owed(self) -> float:
        return self.limiter.updates_owed()

    def wait_for_training(self, max_lag_updates: int | None) -> bool:
        """The other direction of the ratio, for the inference thread before it inserts: waits while
        training is more than `max_lag_updates` batches behind it (None: never), so a slow learner slows
        the actors instead of training less per env step. False once the source is closed."""
        if self._closed:
            return False
        if not self.limiter.lags(max_lag_updates):  # the usual case: no lock per step
            return True
        with self._cond:
            return self._wait(lambda: not self.limiter.lags(max_lag_updates))

    def next_batch(self, timeout_s: float | None = None) -> SampledBatch | None:
        with self._cond:
            if not self._wait(self.limiter.may_sample, deadline_after(timeout_s)):
                return None
            self.limiter.add_sampled()
            self._cond.notify_all()  # an insert waiting for training may go on
        return self.replay.sample(self.batch_size)

    def metrics(self) -> dict[str, float]:
        """Fill, drops, the updates the ratio owes, and the insert and sample rates in agent steps/s
        since the last call."""
        steps = self.replay.new_steps_per_sequence
        now, inserted, sampled = time.monotonic(), self.limiter.inserted * steps, self.limiter.sampled * steps
        last_time, last_inserted, last_sampled = self._last_rates
        elapsed = max(now - last_time, 1e-9)
        self._last_rates = (now, inserted, sampled)
        return {"replay/size_sequences": self.replay.size, "replay/dropped_sequences": self.replay.num_dropped,
                "replay/updates_owed": self.limiter.updates_owed(),
                "replay/insert_steps_per_second": (inserted - last_inserted) / elapsed,
                "replay/sample_steps_per_second": (sampled - last_sampled) / elapsed}

    def describe(self) -> str:
        return f"replay {self.replay.size}/{self.replay.capacity} sequences"

    def checkpoint_sidecars(self) -> dict[str, object]:
        if not self.checkpoint:
            return {}
        # The replay and the replay ratio's counts; inserts wait while they are written.
        return {"replay": ArraySidecar(
            self.replay.lock, self._saved_state,
            self._load_saved, lambda: self.replay.nbytes + self.replay.priorities.tree.nodes.nbytes)}

    def _saved_state(self) -> dict[str, np.ndarray]:
        # The limiter hears of an insert just after the replay's lock is released; the replay's own
        # count, read under that lock, is the one consistent with the saved sequences.
        return {**self.replay.state(), **self.limiter.state(), "rate/inserted": np.asarray(self.replay.num_inserted)}

    def _load_saved(self, arrays) -> None:
        self.replay.load_state(arrays)
        with self._cond:
            self.limiter.load_state(arrays)  # restored sequences are not new frames
        log.info("restored a replay of %d sequences (%d inserted so far)", self.replay.size,
                 self.replay.num_inserted)
