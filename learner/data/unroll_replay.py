"""Experience replay of whole unrolls mixed into V-trace's batches (LASER, Schmitt et al. 2019).

A batch is drawn from a list of sources in fixed ratios that sum to 1: `queue`, the
fresh unrolls the actors just produced (each taken once), and `uniform`, a FIFO
replay of whole unrolls shared by every actor, sampled uniformly. Every fresh unroll
also enters the replays, so it can be drawn again later. A replayed unroll keeps
the behaviour logits it was acted with: V-trace's importance weights then correct
for how far the learner's policy has moved since. Unrolls are stored whole, exactly
as the unroll store cut them, so one never spans two slots and its episode starts
and ends sit where they were.
"""
import threading
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from learner.data import RateLimit
from learner.data.unrolls import UnrollQueue, Unrolls

SOURCE_KINDS = ("queue", "uniform")


class UnrollReplay:
    """A ring of `capacity` unrolls (the oldest is overwritten), sampled uniformly.

    Buffers are allocated when the first unrolls arrive, from their shapes."""

    def __init__(self, capacity: int, seed: Optional[int] = None):
        self.capacity = capacity
        self._buffers: Dict[str, np.ndarray] = {}
        self._inserted_at = np.zeros(capacity, np.int64)  # the update count when each unroll came in
        self._next = 0
        self._size = 0
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self._size

    def add(self, unrolls: Unrolls, update: int) -> None:
        n = len(next(iter(unrolls.values())))
        if n > self.capacity:  # only the newest fit
            unrolls, n = {k: v[-self.capacity:] for k, v in unrolls.items()}, self.capacity
        if not self._buffers:
            self._buffers = {k: np.zeros((self.capacity, *v.shape[1:]), v.dtype) for k, v in unrolls.items()}
        positions = (self._next + np.arange(n)) % self.capacity
        for name, buffer in self._buffers.items():
            buffer[positions] = unrolls[name]
        self._inserted_at[positions] = update
        self._next = int((self._next + n) % self.capacity)
        self._size = min(self.capacity, self._size + n)

    def state(self) -> Dict[str, np.ndarray]:
        """The stored unrolls and their ring position, as named arrays (to save with a checkpoint)."""
        return {**{f"unroll_{k}": v for k, v in self._buffers.items()}, "inserted_at": self._inserted_at,
                "next": np.asarray(self._next), "size": np.asarray(self._size)}

    def load_state(self, arrays, prefix: str = "") -> None:
        """Puts back what `state` returned (under `prefix`); a replay of another capacity is refused."""
        saved = arrays[prefix + "inserted_at"]
        if saved.shape != self._inserted_at.shape:
            raise ValueError(f"saved replay holds {saved.shape[0]} unrolls, this run's {self.capacity}: the replay "
                             "settings changed since it was saved; restore them, or set checkpoint_replay=False")
        names = [k[len(prefix + "unroll_"):] for k in arrays if k.startswith(prefix + "unroll_")]
        self._buffers = {name: np.array(arrays[prefix + "unroll_" + name]) for name in names}
        self._inserted_at[:] = saved
        self._next, self._size = int(arrays[prefix + "next"]), int(arrays[prefix + "size"])

    def sample(self, n: int, update: int) -> Tuple[Unrolls, float]:
        """`n` unrolls drawn uniformly with replacement, and their mean age in updates."""
        positions = self._rng.integers(0, self._size, n)
        return ({k: b[positions] for k, b in self._buffers.items()},
                float(np.mean(update - self._inserted_at[positions])))


def split_counts(batch_size: int, ratios: Sequence[float]) -> np.ndarray:
    """Integer counts per source that sum to `batch_size` and are as close to the ratios as
    integers can be (largest remainders), the same every batch."""
    exact = np.asarray(ratios, np.float64) * batch_size
    counts = np.floor(exact).astype(np.int64)
    remainders = exact - counts
    for i in np.argsort(-remainders, kind="stable")[:batch_size - counts.sum()]:
        counts[i] += 1
    return counts


def check_sources(sources: Dict[str, float], name: str) -> Dict[str, float]:
    """The `{kind: ratio}` mapping, refused with one line unless it is usable."""
    unknown = [k for k in sources if k not in SOURCE_KINDS]
    if unknown:
        raise ValueError(f"{name}: unknown source {unknown[0]!r}; use {', '.join(SOURCE_KINDS)}")
    if "queue" not in sources or sources["queue"] <= 0:
        raise ValueError(f"{name} needs a 'queue' share above 0: fresh unrolls are what fills the replays")
    if any(r < 0 for r in sources.values()):
        raise ValueError(f"{name}: ratios must not be negative, got {dict(sources)}")
    total = sum(sources.values())
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"{name}: the ratios must sum to 1, got {total:g} ({dict(sources)})")
    return dict(sources)


class UnrollMix:
    """The training thread's batches: the queue's fresh unrolls plus samples of the replays.

    The counts per source follow from the ratios and the batch size once, at construction,
    where a mix that could never form a batch is refused. Before the first batch the replays
    are filled with fresh unrolls (the queue's share at a time) up to `min_replay_unrolls`;
    those count as consumed with that batch. `last_fresh` is the number of fresh unrolls the
    last batch consumed: the environment frames it stands for."""

    def __init__(self, queue: UnrollQueue, sources: Dict[str, float], batch_size: int, replay_capacity: int,
                 min_replay_unrolls: int, seed: Optional[int] = None, name: str = "VTraceAgent"):
        sources = check_sources(sources, f"{name}.sources")
        self.counts = dict(zip(sources, (int(c) for c in split_counts(batch_size, list(sources.values())))))
        self.fresh_per_batch = self.counts["queue"]
        if self.fresh_per_batch == 0:
            raise ValueError(f"{name}.sources: a 'queue' share of {sources['queue']:g} of batch_size "
                             f"{batch_size} is no fresh unroll per batch; raise the share or the batch size")
        if self.fresh_per_batch > queue.capacity:  # the batch would wait for ever for its fresh share
            raise ValueError(f"{name}: each batch takes {self.fresh_per_batch} fresh unrolls but "
                             f"unroll_queue_capacity is {queue.capacity}; raise unroll_queue_capacity to at "
                             f"least {self.fresh_per_batch} or lower batch_size")
        if len(sources) > 1 and min_replay_unrolls > replay_capacity:
            raise ValueError(f"{name}: min_replay_unrolls ({min_replay_unrolls}) must not exceed "
                             f"replay_capacity ({replay_capacity})")
        self.queue = queue
        self.shares = {k: c / batch_size for k, c in self.counts.items()}
        self.replays = {k: UnrollReplay(replay_capacity, seed) for k in sources if k != "queue"}
        # Fresh unrolls pace the mix (the queue's back-pressure); the replays only need their fill.
        self.rate = RateLimit(min_size=min_replay_unrolls)
        self.updates = 0
        self.last_fresh = 0
        self.last_replay_age = 0.0

    def next_batch(self, stop: threading.Event) -> Optional[Unrolls]:
        consumed = 0
        while not all(self.rate.filled(len(replay)) for replay in self.replays.values()):
            filling = self.queue.get_batch(self.fresh_per_batch, stop)
            if filling is None:
                return None
            for replay in self.replays.values():
                replay.add(filling, self.updates)
            consumed += self.fresh_per_batch
        fresh = self.queue.get_batch(self.fresh_per_batch, stop)
        if fresh is None:
            return None
        parts, ages = [fresh], []
        for kind, replay in self.replays.items():
            if self.counts[kind]:
                sample, age = replay.sample(self.counts[kind], self.updates)
                parts.append(sample)
                ages.append(age)
            replay.add(fresh, self.updates)  # after sampling: a batch never holds one unroll twice over
        self.updates += 1
        self.last_fresh = consumed + self.fresh_per_batch
        self.last_replay_age = float(np.mean(ages)) if ages else 0.0
        return {k: np.concatenate([p[k] for p in parts]) if len(parts) > 1 else fresh[k] for k in fresh}

    def metrics(self) -> Dict[str, float]:
        if not self.updates:  # no batch formed yet
            return {}
        out = {f"data/share_{k}": v for k, v in self.shares.items()}
        out.update({f"data/{k}_size": float(len(r)) for k, r in self.replays.items()})
        if self.replays:
            out["data/replay_age_updates"] = self.last_replay_age
        return out
