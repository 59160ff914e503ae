"""Replay of single transitions (x, a, r, x', discount) for off-policy actor-critics (SAC), with
the replay ratio kept in both directions: the training thread waits for inserts (RateLimit), and
inserts wait while training is more than `max_lag_updates` gradient steps behind the ratio, so a
slow learner slows the actors instead of silently training less per env step (as the V-trace
queue's back-pressure does)."""
import logging
import threading

import numpy as np

from learner.data import Closable, RateLimit, deadline_after
from learner.data.saved_state import ArraySidecar

log = logging.getLogger(__name__)


class TransitionReplay(Closable):
    """A FIFO ring of `capacity` transitions, sampled uniformly: SAC's data source. `fields` maps
    name -> (shape, dtype). With `checkpoint` the ring is saved beside every checkpoint."""

    def __init__(self, capacity: int, fields: dict[str, tuple[tuple[int, ...], str]], batch_size: int,
                 rate: RateLimit, max_lag_updates: int, seed: int | None = None, checkpoint: bool = False):
        super().__init__()
        self.capacity, self.batch_size, self.rate, self.max_lag_updates = capacity, batch_size, rate, max_lag_updates
        self.checkpoint = checkpoint
        self._counted_inserts = 0
        self._arrays = {name: np.zeros((capacity, *shape), dtype) for name, (shape, dtype) in fields.items()}
        self.size = 0
        self.num_inserted = 0
        self.inserted_at_fill = None  # inserts when the minimum fill was reached: the ratio counts from there
        self.sampled = 0  # transitions handed out
        self._next = 0
        self._rng = np.random.default_rng(seed)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._arrays.values())

    def _updates_owed(self) -> float:
        """Gradient steps the ratio asks for that training has not taken yet."""
        if self.rate.samples_per_insert is None or self.inserted_at_fill is None:
            return 0.0
        # The prefill owes no updates (as CleanRL's learning_starts): training on it alone would only fit
        # the critics to the uniform-random actions while every actor waits.
        owed = self.rate.samples_per_insert * (self.num_inserted - self.inserted_at_fill + 1)
        return (owed - self.sampled) / self.batch_size

    def insert(self, transitions: dict[str, np.ndarray]) -> bool:
        """Adds transitions ([n, ...] fields); first waits while training lags the ratio by more than
        `max_lag_updates` steps. Returns False once the replay is closed."""
        n = len(next(iter(transitions.values())))
        with self._cond:
            if not self._wait(lambda: self._updates_owed() <= self.max_lag_updates):
                return False
            positions = (self._next + np.arange(n)) % self.capacity
            for name, array in self._arrays.items():
                array[positions] = transitions[name]
            self._next = int((self._next + n) % self.capacity)
            self.size = min(self.capacity, self.size + n)
            self.num_inserted += n
            if self.inserted_at_fill is None and self.rate.filled(self.size):
                self.inserted_at_fill = self.num_inserted
            self._cond.notify_all()
        return True

    def _may_sample(self) -> bool:
        """Filled, and within the ratio counted from the fill (one batch's worth allowed at the fill)."""
        if self.inserted_at_fill is None:
            return False
        return self._updates_owed() >= 1.0 if self.rate.samples_per_insert is not None else True

    def next_batch(self, timeout_s: float | None = None) -> dict[str, np.ndarray] | None:
        """`batch_size` transitions sampled uniformly once the RateLimit allows; None once closed or
        after `timeout_s`."""
        with self._cond:
            if not self._wait(self._may_sample, deadline_after(timeout_s)):
                return None
            indices = self._rng.integers(0, self.size, self.batch_size)
            self.sampled += self.batch_size
            batch = {name: array[indices] for name, array in self._arrays.items()}
            self._cond.notify_all()
        return batch

    @property
    def lock(self) -> threading.Condition:
        """Held while `state()`'s arrays are in use: they are views of the live ring."""
        return self._cond

    def state(self) -> dict[str, np.ndarray]:
        """The replay as named arrays (views); hold `lock` until they are written."""
        return {**{f"transitions/{k}": v[:self.size] for k, v in self._arrays.items()},
                "num_inserted": np.asarray(self.num_inserted), "sampled": np.asarray(self.sampled),
                "next": np.asarray(self._next),
                "inserted_at_fill": np.asarray(-1 if self.inserted_at_fill is None else self.inserted_at_fill)}

    def load_state(self, arrays) -> None:
        with self._cond:
            size = None
            for name, array in self._arrays.items():
                stored = arrays[f"transitions/{name}"]
                if stored.shape[1:] != array.shape[1:] or len(stored) > self.capacity:
                    raise ValueError(f"the saved replay's {name} has shape {stored.shape}; this run's replay holds "
                                     f"{array.shape}; resume with the settings it was made with")
                array[:len(stored)] = stored
                size = len(stored)
            self.size = size or 0
            self.num_inserted, self.sampled = int(arrays["num_inserted"]), int(arrays["sampled"])
            self._next = int(arrays["next"])
            fill = int(arrays["inserted_at_fill"])
            self.inserted_at_fill = None if fill < 0 else fill

    def metrics(self) -> dict[str, float]:
        return {"replay/size_transitions": self.size, "replay/inserted": self.num_inserted,
                "replay/updates_owed": self._updates_owed()}

    def take_inserted(self) -> int:
        """Transitions inserted since the last call (a restored replay's are not new)."""
        inserted = self.num_inserted
        new, self._counted_inserts = inserted - self._counted_inserts, inserted
        return new

    def describe(self) -> str:
        return f"replay {self.size:,}/{self.capacity:,}"

    def checkpoint_sidecars(self) -> dict[str, object]:
        if not self.checkpoint:
            return {}
        return {"replay": ArraySidecar(self.lock, self.state, self._load_saved, lambda: self.nbytes)}

    def _load_saved(self, arrays) -> None:
        self.load_state(arrays)
        self._counted_inserts = self.num_inserted  # restored transitions are not new frames
        log.info("restored a replay of %d transitions", self.size)
