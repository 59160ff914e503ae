"""Unroll assembly and the bounded queue between inference and training.

Each slot fills rows of preallocated [max_slots, T+overlap, ...] buffers. When
a slot's row is full its unroll is copied out and its last `overlap` steps
begin the next one; with overlap 1 consecutive unrolls share one step and no
transition is lost. All updates are index-array operations over the batch's slots.
"""
import collections

import numpy as np

from learner.data import Closable, deadline_after
from learner.data.frames import stack_unrolls

Unrolls = dict[str, np.ndarray]  # name -> [n, T+1, ...] as stored; a batch formed of them is [T+1, n, ...]


class UnrollStore:
    """`overlap` steps of each unroll start the next one: 1 for V-trace (the
    bootstrap step), burn-in + 1 (+ frame history) for R2D2's sequences. A fresh
    slot starts at `fresh_start`; rows before it are history that its first
    step's episode start masks out."""

    def __init__(self, max_slots: int, unroll_length: int, fields: dict[str, tuple[tuple[int, ...], str]],
                 overlap: int = 1, fresh_start: int = 0):
        self.unroll_length = unroll_length
        self.overlap = overlap
        self.fresh_start = fresh_start
        self._buffers = {name: np.zeros((max_slots, unroll_length + overlap, *shape), dtype)
                         for name, (shape, dtype) in fields.items()}
        self._num_steps = np.full(max_slots, fresh_start, np.int64)
        self.completed_slots = np.zeros(0, np.int64)  # the slots of the unrolls the last append returned

    def positions(self, slot_ids: np.ndarray) -> np.ndarray:
        """The rows each slot's unroll has filled."""
        return self._num_steps[slot_ids]

    def append(self, slot_ids: np.ndarray, step: dict[str, np.ndarray]) -> Unrolls | None:
        """Adds one step per slot; returns the unrolls that became complete, if any."""
        positions = self._num_steps[slot_ids]
        for name, buffer in self._buffers.items():
            buffer[slot_ids, positions] = step[name]
        positions = positions + 1
        complete = positions == self.unroll_length + self.overlap
        positions[complete] = self.overlap
        self._num_steps[slot_ids] = positions
        if not complete.any():
            return None
        done_slots = self.completed_slots = slot_ids[complete]
        unrolls = {name: buffer[done_slots] for name, buffer in self._buffers.items()}
        for buffer in self._buffers.values():
            buffer[done_slots, :self.overlap] = buffer[done_slots, -self.overlap:]
        return unrolls

    def reset(self, slot_ids: np.ndarray) -> None:
        """Drops these slots' partial unrolls."""
        self._num_steps[slot_ids] = self.fresh_start


class UnrollQueue(Closable):
    """Bounded FIFO of unrolls. `put` blocks while full: that back-pressure keeps
    inference (and so the actors) at most `capacity` unrolls ahead of training,
    which bounds the policy lag."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity
        self._groups = collections.deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def put(self, unrolls: Unrolls) -> bool:
        """Blocks while full; returns False once the queue is closed."""
        n = len(next(iter(unrolls.values())))
        with self._cond:
            if not self._wait(lambda: self._size < self.capacity):
                return False
            self._groups.append(unrolls)
            self._size += n
            self._cond.notify_all()
        return True

    def take(self, batch_size: int, deadline: float | None = None) -> list[Unrolls] | None:
        """Waits for `batch_size` unrolls; returns them as the groups they came in (each [n, T+1, ...],
        the last one cut to size), or None once closed or at `deadline` (time.monotonic(); None: no limit)."""
        with self._cond:
            if not self._wait(lambda: self._size >= batch_size, deadline):
                return None
            parts, needed = [], batch_size
            while needed:
                group = self._groups.popleft()
                n = len(next(iter(group.values())))
                if n > needed:
                    self._groups.appendleft({k: v[needed:] for k, v in group.items()})
                    group = {k: v[:needed] for k, v in group.items()}
                    n = needed
                parts.append(group)
                needed -= n
            self._size -= batch_size
            self._cond.notify_all()
        return parts

    def get_batch(self, batch_size: int, deadline: float | None = None) -> Unrolls | None:
        """As `take`, the groups concatenated, [batch, T+1, ...] as stored."""
        parts = self.take(batch_size, deadline)
        if parts is None:
            return None
        return parts[0] if len(parts) == 1 else {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


class FreshUnrolls:
    """The data source of on-policy agents (PPO): batches of `batch_size` fresh unrolls from the
    queue, each used once, time-major with their frames stacked (learner.data.frames.stack_unrolls,
    as UnrollMix's); nothing to checkpoint (a resumed run collects afresh)."""

    def __init__(self, queue: UnrollQueue, batch_size: int):
        self.queue, self.batch_size = queue, batch_size

    def next_batch(self, timeout_s: float | None = None) -> Unrolls | None:
        groups = self.queue.take(self.batch_size, deadline_after(timeout_s))
        return None if groups is None else stack_unrolls(groups)

    def metrics(self) -> dict[str, float]:
        return {"unroll_queue/depth": len(self.queue)}

    def describe(self) -> str:
        return f"queue {len(self.queue)}/{self.queue.capacity}"

    def checkpoint_sidecars(self) -> dict[str, object]:
        return {}

    def close(self) -> None:
        self.queue.close()
