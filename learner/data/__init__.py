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


def wait_for(condition: threading.Condition, ready: Callable[[], bool], stop: threading.Event,
             poll_s: float = 0.1) -> bool:
    """Waits, holding `condition`, until `ready()`; False if `stop` is set first. Producers and consumers
    notify `condition`; whoever sets `stop` does not, so the wait wakes every `poll_s` to look at it."""
    while not ready():
        if stop.is_set():
            return False
        condition.wait(poll_s)
    return True


class LearnerStopped(Exception):
    """The learner is shutting down: a producer waiting on a data structure gives up, and no more
    actions will come."""


class DataSource(Protocol):
    """Where the training loop takes its batches from (learner/training_loop.py); the progress line
    and the checkpointer read it too."""

    def next_batch(self, stop: threading.Event):
        """The next batch, waiting as the source's RateLimit says; None once `stop` is set."""

    def metrics(self) -> dict[str, float]:
        """Scalars (queue depth, replay fill, rates) for the progress record and TensorBoard."""

    def describe(self) -> str:
        """A short text of the source's state for the progress line."""

    def checkpoint_sidecars(self) -> dict[str, object]:
        """What is saved beside a checkpoint, by name (learner.data.saved_state.ArraySidecar objects);
        empty unless the source was asked to checkpoint its contents."""
