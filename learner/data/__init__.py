"""Where the training thread's batches come from: the unroll store (inference writes each slot's
steps there), the queue of fresh unrolls, replays of unrolls and of sequences, the sum tree
behind prioritised sampling, and the mixes and samplers that form batches from them.

An agent's parts meet here: its adder (learner/data/adders.py) turns the steps its policy acted on
into training data and hands them to its data source, which owns them (and their checkpointing)
until the training loop takes a batch. Every data source (FreshUnrolls, UnrollMix,
RateLimitedSampler, TransitionReplay) has one interface, `DataSource`, and its pace is one
`RateLimit`."""
import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Protocol


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

    def allows(self, size: int, inserted: int, sampled: int, batch: int) -> bool:
        """Whether `batch` more items may be sampled from a source of `size` items that has seen
        `inserted` inserts and handed out `sampled` items."""
        if not self.filled(size):
            return False
        return self.samples_per_insert is None or sampled + batch <= self.samples_per_insert * inserted


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
