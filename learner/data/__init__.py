"""Where the training thread's batches come from: the unroll store (inference writes each slot's
steps there), the queue of fresh unrolls, replays of unrolls and of sequences, the sum tree
behind prioritised sampling, and the mixes and samplers that form batches from them.

An agent's parts meet here: its adder (learner/data/adders.py) turns the steps its policy acted on
into training data and hands them to its data source, which owns them (and their checkpointing)
until the training loop takes a batch. Every data source (FreshUnrolls, UnrollMix,
RateLimitedSampler, TransitionReplay) has one interface, `DataSource`, and its pace is one
`RateLimit`, which the replays count against with a `RateLimiter`."""
import collections
import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Protocol

import numpy as np


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo; None where there is none."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def require_memory(needed: int, what: str, fix: str) -> None:
    """Refuses, in one line, a buffer of `needed` bytes above 80 % of the available memory."""
    available = available_memory_bytes()
    if available is not None and needed > 0.8 * available:
        raise ValueError(f"{what} needs {needed / 2**30:.1f} GiB but only {available / 2**30:.1f} GiB is "
                         f"available; {fix}")


@dataclasses.dataclass(frozen=True)
class RateLimit:
    """When a source may hand out its next batch: once it holds `min_size` items (the minimum
    fill) and, with `samples_per_insert` set, while the items sampled stay within that many per
    item inserted (the replay ratio); None leaves the pace to the fresh data. The producers'
    side is the queue's capacity: a full queue blocks inference (back-pressure)."""
    min_size: int = 0
    samples_per_insert: float | None = None

    def filled(self, size: int) -> bool:
        return size >= self.min_size


class RateLimiter:
    """A replay's pace, as Reverb's sample-to-insert ratio: counts the items inserted and sampled
    against a RateLimit, so training may take a batch once the replay holds `min_size` items and
    while it stays within `samples_per_insert` samples per insert, and inserts may wait while
    training lags the ratio (`lags`). Counted from zero (`count_from_fill` False: the ratio owes
    the minimum fill's samples as soon as it is reached, R2D2's) or from the insert that reached the
    fill (True: the prefill owes no samples, as with CleanRL's learning_starts, SAC's). Its owner's lock
    guards it; `take_inserted` feeds the frame budget."""

    def __init__(self, rate: RateLimit, batch_size: int, count_from_fill: bool = False):
        self.rate, self.batch_size, self.count_from_fill = rate, batch_size, count_from_fill
        self.inserted = 0
        self.sampled = 0
        self.inserted_at_fill: int | None = None  # inserts when the minimum fill was reached
        self._counted = 0  # inserts take_inserted has reported

    def add_inserted(self, n: int, size: int) -> None:
        """`n` items went in; the replay now holds `size`."""
        self.inserted += n
        if self.inserted_at_fill is None and self.rate.filled(size):
            self.inserted_at_fill = self.inserted

    def add_sampled(self) -> None:
        self.sampled += self.batch_size

    def _samples_allowed(self) -> float:
        counted = self.inserted - self.inserted_at_fill + 1 if self.count_from_fill else self.inserted
        return self.rate.samples_per_insert * counted

    def updates_owed(self) -> float:
        """Batches the ratio allows that training has not taken yet (0 before the minimum fill)."""
        if self.rate.samples_per_insert is None or self.inserted_at_fill is None:
            return 0.0
        return (self._samples_allowed() - self.sampled) / self.batch_size

    def may_sample(self) -> bool:
        if self.inserted_at_fill is None:
            return False
        return self.rate.samples_per_insert is None or self.sampled + self.batch_size <= self._samples_allowed()

    def lags(self, max_lag_updates: int | None) -> bool:
        """Whether training is more than `max_lag_updates` batches behind the ratio (None: never)."""
        return max_lag_updates is not None and self.updates_owed() > max_lag_updates

    def take_inserted(self) -> int:
        """Items inserted since the last call (a restored replay's are not new)."""
        new, self._counted = self.inserted - self._counted, self.inserted
        return new

    def state(self) -> dict[str, np.ndarray]:
        fill = -1 if self.inserted_at_fill is None else self.inserted_at_fill
        return {"rate/inserted": np.asarray(self.inserted), "rate/sampled": np.asarray(self.sampled),
                "rate/inserted_at_fill": np.asarray(fill)}

    def load_state(self, arrays) -> None:
        self.inserted, self.sampled = int(arrays["rate/inserted"]), int(arrays["rate/sampled"])
        fill = int(arrays["rate/inserted_at_fill"])
        self.inserted_at_fill = None if fill < 0 else fill
        self._counted = self.inserted  # restored items are not new frames


def deadline_after(timeout_s: float | None) -> float | None:
    """The time.monotonic() at which a wait of `timeout_s` ends (None: never)."""
    return None if timeout_s is None else time.monotonic() + timeout_s


def wait_for(condition: threading.Condition, ready: Callable[[], bool], closed: Callable[[], bool],
             deadline: float | None = None) -> bool:
    """Waits, holding `condition`, until `ready()`. False once `closed()` (checked first: a closed
    structure hands out nothing more) or at `deadline` (see deadline_after). Producers, consumers and
    `close()` all notify `condition`, so the wait sleeps until one of them does."""
    while not closed():
        if ready():
            return True
        if deadline is None:
            condition.wait()
        else:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            condition.wait(remaining)
    return False


class Closable:
    """A blocking structure whose waits sleep on its condition `_cond` until they can go on or it is
    closed: `close()` wakes them all, for good (the learner closes its data source when it stops)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._closed = False

    def _wait(self, ready: Callable[[], bool], deadline: float | None = None) -> bool:
        """Holding `_cond`: waits until `ready()`; False once closed or at `deadline`."""
        return wait_for(self._cond, ready, lambda: self._closed, deadline)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class Handoff(Closable):
    """A bounded FIFO between one producer thread and one consumer: `put` waits while it holds
    `capacity` items, `get` while it holds none; both give up once it is closed. A producer that
    fails hands its error over with `fail`, and the consumer's `get` raises it."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity
        self._items = collections.deque()
        self._error: BaseException | None = None

    def put(self, item) -> bool:
        with self._cond:
            if not self._wait(lambda: len(self._items) < self.capacity):
                return False
            self._items.append(item)
            self._cond.notify_all()
        return True

    def get(self):
        """The oldest item; None once closed."""
        with self._cond:
            if not self._wait(lambda: self._items or self._error is not None):
                return None
            if self._error is not None:
                raise self._error
            item = self._items.popleft()
            self._cond.notify_all()
        return item

    def fail(self, error: BaseException) -> None:
        with self._cond:
            self._error = error
            self._cond.notify_all()


class LearnerStopped(Exception):
    """The learner is shutting down: a producer waiting on a data structure gives up, and no more
    actions will come."""


class DataSource(Protocol):
    """Where the training loop takes its batches from (learner/training_loop.py); the progress line
    and the checkpointer read it too. The learner closes it when it stops."""

    def next_batch(self, timeout_s: float | None = None):
        """The next batch, waiting as the source's RateLimit says; None once closed, or after
        `timeout_s` without one."""

    def metrics(self) -> dict[str, float]:
        """Scalars (queue depth, replay fill, rates) for the progress record and TensorBoard."""

    def describe(self) -> str:
        """A short text of the source's state for the progress line."""

    def checkpoint_sidecars(self) -> dict[str, object]:
        """What is saved beside a checkpoint, by name (learner.data.saved_state.ArraySidecar objects);
        empty unless the source was asked to checkpoint its contents."""

    def close(self) -> None:
        """Wakes every wait on the source for good: batches come back None, and the adders' inserts
        give up (LearnerStopped)."""
