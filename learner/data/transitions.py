"""Replay of single transitions (x, a, r, x', discount) for off-policy actor-critics (SAC), with
the replay ratio kept in both directions: the training thread waits for inserts (RateLimit), and
inserts wait while training is more than `max_lag_updates` gradient steps behind the ratio, so a
slow learner slows the actors instead of silently training less per env step (as the V-trace
queue's back-pressure does)."""
import logging
import threading

import numpy as np

from learner.data import Closable, RateLimit, RateLimiter, deadline_after
from learner.data.ring import ArrayRing
from learner.data.saved_state import ArraySidecar

log = logging.getLogger(__name__)


class TransitionReplay(Closable):
    """A FIFO ring of `capacity` transitions, sampled uniformly: SAC's data source. `fields` maps
    name -> (shape, dtype). With `checkpoint` the ring is saved beside every checkpoint."""

    def __init__(self, capacity: int, fields: dict[str, tuple[tuple[int, ...], str]], batch_size: int,
                 rate: RateLimit, max_lag_updates: int, seed: int | None = None, checkpoint: bool = False):
        super().__init__()
        self.capacity, self.batch_size, self.max_lag_updates = capacity, batch_size, max_lag_updates
        self.checkpoint = checkpoint
        # The prefill owes no samples (as with CleanRL's learning_starts): training on it
        # alone would only fit the critics to the uniform-random actions while every actor waits.
        self.limiter = RateLimiter(rate, batch_size, count_from_fill=True)
        self.ring = ArrayRing(capacity, fields)
        self._rng = np.random.default_rng(seed)

    @property
    def nbytes(self) -> int:
        return self.ring.nbytes

    @property
    def size(self) -> int:
        return len(self.ring)

    def insert(self, transitions: dict[str, np.ndarray]) -> bool:
        """Adds transitions ([n, ...] fields); first waits while training lags the ratio by more than
        `max_lag_updates` steps. Returns False once the replay is closed."""
        n = len(next(iter(transitions.values())))
        with self._cond:
            if not self._wait(lambda: not self.limiter.lags(self.max_lag_updates)):
                return False
            self.ring.add(transitions)
            self.limiter.add_inserted(n, self.size)
            self._cond.notify_all()
        return True

    def next_batch(self, timeout_s: float | None = None) -> dict[str, np.ndarray] | None:
        """`batch_size` transitions sampled uniformly once the RateLimit allows; None once closed or
        after `timeout_s`."""
        with self._cond:
            if not self._wait(self.limiter.may_sample, deadline_after(timeout_s)):
                return None
            indices = self._rng.integers(0, self.size, self.batch_size)
            self.limiter.add_sampled()
            batch = self.ring.gather(indices)
            self._cond.notify_all()
        return batch

    @property
    def lock(self) -> threading.Condition:
        """Held while `state()`'s arrays are in use: they are views of the live ring."""
        return self._cond

    def state(self) -> dict[str, np.ndarray]:
        """The replay as named arrays (views); hold `lock` until they are written."""
        return {**self.ring.state("transitions/"), **self.limiter.state()}

    def load_state(self, arrays) -> None:
        with self._cond:
            self.ring.load_state(arrays, "transitions/")
            self.limiter.load_state(arrays)  # restored transitions are not new frames

    def metrics(self) -> dict[str, float]:
        return {"replay/size_transitions": self.size, "replay/inserted": self.limiter.inserted,
                "replay/updates_owed": self.limiter.updates_owed()}

    def take_inserted(self) -> int:
        """Transitions inserted since the last call (a restored replay's are not new)."""
        with self._cond:
            return self.limiter.take_inserted()

    def describe(self) -> str:
        return f"replay {self.size:,}/{self.capacity:,}"

    def checkpoint_sidecars(self) -> dict[str, object]:
        if not self.checkpoint:
            return {}
        return {"replay": ArraySidecar(self.lock, self.state, self._load_saved, lambda: self.nbytes)}

    def _load_saved(self, arrays) -> None:
        self.load_state(arrays)
        log.info("restored a replay of %d transitions", self.size)
