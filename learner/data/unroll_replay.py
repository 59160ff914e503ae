"""Experience replay of whole unrolls mixed into V-trace's batches (LASER, Schmitt et al. 2019;
the source lists of elite experience replay).

A batch is drawn from a list of sources in fixed ratios that sum to 1: `queue`, the fresh
unrolls the actors just produced (each taken once), and replays that all draw from one shared
ring of past unrolls (every fresh unroll enters it after its batch) in their own way:
`uniform`, `prioritised` (by the last V-trace error), `elite` (the unrolls the current policy
would encode most like the behaviour policy did: the least off-policy) and `attentive` (the
unrolls whose states are nearest the states the policy visits now); learner/data/
replay_samplers.py and learner/data/elite.py hold the samplers.

Stored unrolls hold single frames (learner/data/frames.py); a batch's observations are stacked
once, when it is formed. A replayed unroll keeps the behaviour logits it was acted with: V-trace's importance weights
then correct for how far the learner's policy has moved since. Unrolls are stored whole,
exactly as the unroll store cut them, so one never spans two slots and its episode starts and
ends sit where they were. Every batch row carries its source (an index into SOURCE_KINDS) and
its loss weight (prioritised replay's importance weight, 1 elsewhere) per step, so the loss can
tell replayed from fresh steps (CLEAR's terms, the per-source metrics).
"""
import logging
import threading
from collections.abc import Callable, Sequence

import numpy as np

from learner.data import RateLimit, deadline_after, require_memory
from learner.data.elite import EliteSampler
from learner.data.frames import stack_unrolls
from learner.data.replay_samplers import AttentiveSampler, PrioritisedSampler, UniformSampler
from learner.data.ring import ArrayRing, saved_fields
from learner.data.saved_state import ArraySidecar
from learner.data.unrolls import UnrollQueue, Unrolls

log = logging.getLogger(__name__)

SOURCE_KINDS = ("queue", "uniform", "prioritised", "elite", "attentive")
# Kinds that compare stored state features (the `features` field each step keeps from its policy call).
FEATURE_KINDS = ("elite", "attentive")


def needs_features(sources: dict[str, float]) -> bool:
    """Whether a mix of these sources compares stored state features: its unrolls must keep them."""
    return any(kind in FEATURE_KINDS for kind in sources)


class UnrollRing:
    """A ring of `capacity` unrolls (the oldest is overwritten) that every replay source samples.

    Buffers are allocated when the first unrolls arrive, from their shapes. It records per
    unroll the update it came in at (ages), how often a batch took it (elite sampling's
    preference) and a generation that changes whenever its place is written, so a choice made
    ahead (elite's prefetch) does not count towards the unroll that has replaced it. `lock` guards
    every access: elite sampling reads it from its own thread."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.lock = threading.RLock()
        self.unrolls = ArrayRing(capacity)
        self.inserted_at = np.zeros(capacity, np.int64)
        self.times_sampled = np.zeros(capacity, np.int64)
        self.generation = np.zeros(capacity, np.int64)
        self._writes = 0

    def __len__(self) -> int:
        return len(self.unrolls)

    def add(self, unrolls: Unrolls, update: int) -> np.ndarray:
        """Stores `unrolls`; returns the positions they took (the newest only, if more than fit)."""
        n = len(next(iter(unrolls.values())))
        if n > self.capacity:
            unrolls, n = {k: v[-self.capacity:] for k, v in unrolls.items()}, self.capacity
        with self.lock:
            positions = self.unrolls.rows(self.unrolls.add(unrolls))
            self.inserted_at[positions] = update
            self.times_sampled[positions] = 0
            self._writes += 1
            self.generation[positions] = self._writes
        return positions

    def gather(self, positions: np.ndarray) -> Unrolls:
        """Copies of the unrolls at `positions` (later overwrites do not reach them)."""
        with self.lock:
            return self.unrolls.gather(positions)

    def take(self, positions: np.ndarray) -> tuple[Unrolls, np.ndarray, np.ndarray]:
        """The unrolls at `positions` with the update each came in at and its generation, in one view."""
        with self.lock:
            return self.gather(positions), self.inserted_at[positions], self.generation[positions]

    def uniform_positions(self, n: int, rng: np.random.Generator, replace: bool = True) -> np.ndarray:
        """`n` positions drawn uniformly; without replacement the draw stops at the ring's size."""
        with self.lock:
            size = len(self.unrolls)
            if replace:
                return rng.integers(0, size, n)
            return rng.choice(size, min(n, size), replace=False)

    def keys(self, positions: np.ndarray, generations: np.ndarray | None = None) -> np.ndarray:
        """A key per unroll: its place's generation times the capacity plus its position, so one key names
        one stored unroll (the generation changes whenever the place is written)."""
        with self.lock:
            generations = self.generation[positions] if generations is None else generations
        return np.asarray(generations, np.int64) * self.capacity + positions

    def current(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The positions `keys` name, and which of them still hold the unroll their key named."""
        keys = np.asarray(keys, np.int64)
        positions = keys % self.capacity
        with self.lock:
            return positions, (keys >= 0) & (self.generation[positions] == keys // self.capacity)

    def mark_sampled(self, positions: np.ndarray, generations: np.ndarray) -> np.ndarray:
        """Counts a batch's use of these unrolls, unless their place was written since they were taken;
        returns which of them no batch had taken before (to tell fresh replays from repeats)."""
        with self.lock:
            unchanged = self.generation[positions] == generations
            first = unchanged & (self.times_sampled[positions] == 0)
            np.add.at(self.times_sampled, positions[unchanged], 1)
        return first

    def state(self) -> dict[str, np.ndarray]:
        """The stored unrolls and their ring position, as named arrays (to save with a checkpoint): views
        of the live buffers, so hold `lock` until they are written (no second copy of a large ring)."""
        with self.lock:
            return {**self.unrolls.state("unroll_"), "inserted_at": self.inserted_at,
                    "times_sampled": self.times_sampled, "generation": self.generation,
                    "writes": np.asarray(self._writes)}

    def load_state(self, arrays, prefix: str = "") -> None:
        """Puts back what `state` returned (under `prefix`); a ring of another capacity is refused."""
        saved = arrays[prefix + "inserted_at"]
        if saved.shape != self.inserted_at.shape:
            raise ValueError(f"saved replay holds {saved.shape[0]} unrolls, this run's {self.capacity}: the replay "
                             "settings changed since it was saved; restore them, or set checkpoint_replay=False")
        with self.lock:
            self.unrolls.load_state(arrays, prefix + "unroll_")
            self.inserted_at[:] = saved
            self.times_sampled[:] = arrays[prefix + "times_sampled"]
            self.generation[:] = arrays[prefix + "generation"]
            self._writes = int(arrays[prefix + "writes"])


def split_counts(batch_size: int, ratios: Sequence[float]) -> np.ndarray:
    """Integer counts per source that sum to `batch_size` and are as close to the ratios as
    integers can be (largest remainders), the same every batch: exact where ratio x batch_size
    is whole, otherwise within one unroll of it."""
    exact = np.asarray(ratios, np.float64) * batch_size
    counts = np.floor(exact).astype(np.int64)
    remainders = exact - counts
    for i in np.argsort(-remainders, kind="stable")[:batch_size - counts.sum()]:
        counts[i] += 1
    return counts


def check_sources(sources: dict[str, float], name: str) -> dict[str, float]:
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


def build_sampler(kind: str, ring: UnrollRing, count: int, rng: np.random.Generator,
                  encode: Callable[[Unrolls], np.ndarray] | None, total_updates: int, features: str):
    """The sampler of a replay source; each gets a generator of its own (elite's runs on a thread)."""
    rng = np.random.default_rng(rng.integers(2 ** 63))
    if kind == "uniform":
        return UniformSampler(ring, count, rng)
    if kind == "prioritised":
        return PrioritisedSampler(ring, count, rng)
    if kind == "attentive":
        return AttentiveSampler(ring, count, rng, total_updates)
    return EliteSampler(ring, count, rng, encode, total_updates, features=features)


def per_step(values: np.ndarray, steps: int) -> np.ndarray:
    """A per-unroll [n] value repeated over the unroll's steps, [n, steps] (every batch field is per step)."""
    return np.repeat(np.asarray(values)[:, None], steps, axis=1)


class UnrollMix:
    """The training thread's batches: the queue's fresh unrolls plus the replay sources' samples.

    The counts per source follow from the ratios and the batch size once, at construction,
    where a mix that could never form a batch is refused. Before the first batch the ring is
    filled with fresh unrolls (the queue's share at a time) up to `min_replay_unrolls`; those
    count as consumed with that batch. `last_fresh` is the number of fresh unrolls the last batch
    consumed: the environment frames it stands for.

    `encode(batch) -> [T+1, n, F]` is the current policy's state features of unrolls as a batch
    holds them (elite sampling's re-encoding of stored ones); `total_fresh_unrolls` is the run's
    length in fresh unrolls (the candidate multipliers anneal over its updates); `features` says what
    those features are ('core' or 'policy_logits': only logits make elite's 'kl_div' meaningful).

    `fields` (name -> per-unroll shape and dtype) is what each stored unroll holds: the ring's size is
    checked against the memory from it, and a saved ring with other fields is refused. With `checkpoint`
    the ring, its samplers' state and the update count are saved beside every checkpoint.
    `updates_done()`, asked once before the first batch, is how many updates a resumed run made: without
    its saved ring the mix would count from 0 again and anneal elite's and attentive's candidate
    multipliers afresh. A batch is time-major [T+1, B, ...], its frames stacked
    (learner.data.frames.stack_unrolls), with `key` [B] per unroll."""

    def __init__(self, queue: UnrollQueue, sources: dict[str, float], batch_size: int, replay_capacity: int,
                 min_replay_unrolls: int, seed: int | None = None, name: str = "VTraceAgent",
                 encode: Callable[[Unrolls], np.ndarray] | None = None, total_fresh_unrolls: int = 1,
                 features: str = "core", fields: dict[str, tuple[tuple[int, ...], str]] | None = None,
                 checkpoint: bool = False, updates_done: Callable[[], int] | None = None):
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
        replay_kinds = [k for k in sources if k != "queue"]
        empty = [k for k in replay_kinds if self.counts[k] == 0]
        if empty:
            raise ValueError(f"{name}.sources: a {empty[0]!r} share of {sources[empty[0]]:g} of batch_size "
                             f"{batch_size} rounds to no unroll per batch; raise the share or the batch size, or leave "
                             "the source out")
        if replay_kinds and min_replay_unrolls > replay_capacity:
            raise ValueError(f"{name}: min_replay_unrolls ({min_replay_unrolls}) must not exceed "
                             f"replay_capacity ({replay_capacity})")
        largest = max([self.counts[k] for k in replay_kinds if k in FEATURE_KINDS], default=0)
        if largest > min_replay_unrolls:  # elite and attentive choose among distinct stored unrolls
            raise ValueError(f"{name}: a batch takes {largest} unrolls from one elite or attentive source but "
                             f"min_replay_unrolls is {min_replay_unrolls}; raise min_replay_unrolls to at least "
                             f"{largest}")
        self.queue = queue
        self.shares = {k: c / batch_size for k, c in self.counts.items()}
        self.ring = UnrollRing(replay_capacity) if replay_kinds else None
        rng = np.random.default_rng(seed)
        total_updates = max(1, total_fresh_unrolls // self.fresh_per_batch)
        # Elite sampling encodes stored unrolls as a batch would hold them, and compares the features
        # with the stored ones, [n, T+1, F].
        encode_stored = None if encode is None else lambda unrolls: np.swapaxes(encode(stack_unrolls([unrolls])), 0, 1)
        self.samplers = {k: build_sampler(k, self.ring, self.counts[k], rng, encode_stored, total_updates, features)
                         for k in replay_kinds}
        # Fresh unrolls pace the mix (the queue's back-pressure); the replays only need their fill.
        self.rate = RateLimit(min_size=min_replay_unrolls)
        self.updates = 0
        self.last_fresh = 0
        self._filled = 0
        self._metrics: dict[str, float] = {}
        self.source_means: dict[str, float] = {}  # the last update's per-source means (the loss's), to describe
        self.fields, self.checkpoint = fields, checkpoint
        self._updates_done = updates_done
        self.unroll_nbytes = sum(int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
                                 for shape, dtype in (fields or {}).values())
        if self.ring is not None and fields is not None:
            ring_nbytes = replay_capacity * self.unroll_nbytes
            require_memory(ring_nbytes, f"a replay of {replay_capacity} unrolls", f"lower {name}.replay_capacity")
            log.info("replay: %d unrolls of %.2f MB, %.0f MB in all (%s)", replay_capacity, self.unroll_nbytes / 1e6,
                     ring_nbytes / 1e6, ", ".join(f"{k} {r:g}" for k, r in self.shares.items()))


    def _insert(self, unrolls: Unrolls) -> np.ndarray:
        positions = self.ring.add(unrolls, self.updates)
        for sampler in self.samplers.values():
            sampler.inserted(positions)
        return positions

    def next_batch(self, timeout_s: float | None = None) -> Unrolls | None:
        if self._updates_done is not None:
            self.updates = max(self.updates, self._updates_done())
            self._updates_done = None
        deadline = deadline_after(timeout_s)
        while self.ring is not None and not self.rate.filled(len(self.ring)):
            filling = self.queue.get_batch(self.fresh_per_batch, deadline)
            if filling is None:
                return None
            self._insert(filling)
            self._filled += self.fresh_per_batch  # counted with the first batch, also if this call stops
        fresh = self.queue.get_batch(self.fresh_per_batch, deadline)
        if fresh is None:
            return None
        n, steps = next(iter(fresh.values())).shape[:2]
        parts = [{**fresh, "source": per_step(np.zeros(n, np.int32), steps),
                  "sample_weight": np.ones((n, steps), np.float32)}]
        metrics: dict[str, float] = {}
        keys = [np.full(n, -1, np.int64)]  # the fresh rows' keys once they are stored, below
        for kind, sampler in self.samplers.items():
            drawn = sampler.draw(self.updates, fresh)
            if drawn is None:  # closed while elite's candidates were prepared
                return None
            keys.append(self.ring.keys(drawn.positions, drawn.generations))
            n = len(drawn.positions)
            weights = np.ones(n, np.float32) if drawn.weights is None else drawn.weights.astype(np.float32)
            parts.append({**{k: drawn.unrolls[k] for k in fresh},
                          "source": per_step(np.full(n, SOURCE_KINDS.index(kind), np.int32), steps),
                          "sample_weight": per_step(weights, steps)})
            metrics[f"data/{kind}_age_updates"] = float(np.mean(self.updates - drawn.inserted_at))
            metrics[f"data/{kind}_loss_weight"] = float(np.mean(weights))
            metrics.update({f"data/{kind}_{name}": value for name, value in drawn.metrics.items()})
            # Whether a source's gain comes from which unrolls it picks or from not repeating them.
            metrics[f"data/{kind}_first_replays"] = float(np.mean(self.ring.mark_sampled(drawn.positions,
                                                                                        drawn.generations)))
        if self.ring is not None:  # after sampling: a batch never holds one unroll twice over
            stored = self._insert(fresh)  # the newest only, when the ring is smaller than the fresh share
            keys[0][len(keys[0]) - len(stored):] = self.ring.keys(stored)
        self.updates += 1
        self.last_fresh, self._filled = self._filled + self.fresh_per_batch, 0
        self._metrics = metrics
        batch = stack_unrolls(parts)
        batch["key"] = np.concatenate(keys)  # [B], per unroll (-1: not stored)
        return batch

    def feedback(self, keys: np.ndarray, errors: np.ndarray) -> None:
        """Per-unroll V-trace errors of a batch's rows, by the batch's `key`s: prioritised replay's new
        priorities for every stored unroll a key still names (whichever source drew it: each was trained
        on; the fresh ones just stored too). An unroll whose place was written since, by this batch's
        fresh ones or later, is gone: its error is not its successor's."""
        sampler = self.samplers.get("prioritised")
        if sampler is None:
            return
        positions, current = self.ring.current(keys)
        sampler.feedback(positions[current], np.asarray(errors, np.float64)[current])

    def metrics(self) -> dict[str, float]:
        out = {"unroll_queue/depth": len(self.queue)}
        if not self.updates:  # no batch formed yet
            return out
        out.update({f"data/share_{k}": v for k, v in self.shares.items()})
        if self.ring is not None:
            out["data/replay_size"] = float(len(self.ring))
        return {**out, **self._metrics}

    def describe(self) -> str:
        """The queue, the ring and, per replay source, its share, mean age in updates, importance ratio
        pi/mu, KL(mu || pi) and (elite, attentive) mean distance, as of the last batch."""
        line = f"queue {len(self.queue)}/{self.queue.capacity}"
        if self.ring is None:
            return line
        line += f" | replay {len(self.ring)}/{self.ring.capacity}"
        metrics = {**self.metrics(), **self.source_means}
        for kind in self.samplers:
            parts = [f"{kind} {self.shares[kind]:g}"]
            for label, name in (("age", "age_updates"), ("rho", "rho"), ("kl", "kl"), ("d", "distance")):
                if f"data/{kind}_{name}" in metrics:
                    parts.append(f"{label} {metrics[f'data/{kind}_{name}']:.3g}")
            line += " | " + " ".join(parts)
        return line

    def checkpoint_sidecars(self) -> dict[str, object]:
        if not self.checkpoint or self.ring is None:
            return {}
        # The ring, its samplers' state (priorities) and the update count (the replay ages count from it),
        # under the ring's lock, which keeps elite sampling's thread out meanwhile.
        return {"replay": ArraySidecar(self.ring.lock, self.state, self._load_saved,
                                       lambda: self.ring.capacity * self.unroll_nbytes)}

    def _load_saved(self, arrays) -> None:
        self.load_state(arrays, fields=self.fields)
        log.info("restored a replay of %d unrolls", len(self.ring))

    def state(self) -> dict[str, np.ndarray]:
        arrays = {"mix_updates": np.asarray(self.updates)}
        if self.ring is not None:
            arrays.update({f"ring/{k}": v for k, v in self.ring.state().items()})
        for kind, sampler in self.samplers.items():
            arrays.update({f"{kind}/{k}": v for k, v in sampler.state().items()})
        return arrays

    def load_state(self, arrays, fields: dict[str, tuple[tuple[int, ...], str]] | None = None) -> None:
        """Puts back what `state` returned; with `fields` (name -> per-unroll shape and dtype, what this
        run stores) a ring saved with other fields (other sources or features) is refused in one line."""
        # A ring saved before its first unroll has no fields to compare (and nothing to load but its counters).
        saved_size = int(arrays["ring/unroll_written"]) if self.ring is not None else 0
        if self.ring is not None and fields is not None and saved_size > 0:
            prefix = "ring/unroll_"
            saved = {name: (tuple(arrays[prefix + name].shape[1:]), str(arrays[prefix + name].dtype))
                     for name in saved_fields(arrays, prefix)}
            if saved != fields:
                differ = sorted(set(saved.items()) ^ set(fields.items()))
                raise ValueError(f"the saved replay stores other fields than this run's ({differ[0][0]}: saved "
                                 f"{saved.get(differ[0][0])}, now {fields.get(differ[0][0])}): the sources, "
                                 "replay_features or training.num_stacked_frames changed since it was saved; restore "
                                 "them, or set checkpoint_replay=False")
        if self.ring is not None:
            self.ring.load_state(arrays, prefix="ring/")
        for kind, sampler in self.samplers.items():
            sampler.load_state({k[len(kind) + 1:]: arrays[k] for k in arrays if k.startswith(kind + "/")})
        self.updates = int(arrays["mix_updates"])

    def close(self) -> None:
        self.queue.close()
        for sampler in self.samplers.values():
            sampler.close()
