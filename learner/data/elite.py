"""Elite sampling: replay the stored unrolls that have become least off-policy.

Each stored step keeps the state features its behaviour policy produced when it acted (the
same policy call, so acting pays nothing extra). To draw `count` unrolls, lambda x count
candidates are drawn uniformly (without replacement), the current policy encodes the same
states, and a distance between the stored and the new features measures how far the policy has
moved on each unroll; a strategy then picks `count` of them. The candidates are prepared ahead
on a thread of their own (`prefetch` batches), so the encoding is off the training thread's
critical path; the price is that a batch's choice was made with weights a few updates old.

The strategies, in the order the elite experience replay of parralplex/elite_buffer_vtrace
numbers them:
1. 'lowest': the `count` candidates of the lowest distance.
2. 'strata': sorted by distance and cut into `count` strata; each stratum's lowest.
3. 'lowest_least_sampled': as 1, but the unrolls batches took least often come first.
4. 'strata_least_sampled': as 2, but within a stratum the least often taken come first.
"""
import threading
from collections.abc import Callable

import gin
import numpy as np

from learner.data import Handoff
from learner.data.replay_samplers import Drawn, Sampler, annealed_multiplier
from learner.data.unrolls import Unrolls
from seed.settings import require_positive

STRATEGIES = ("lowest", "strata", "lowest_least_sampled", "strata_least_sampled")
DISTANCES = ("ln_norm", "cos_dist", "kl_div")


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.sum(np.exp(x), axis=-1, keepdims=True))


def off_policy_distances(stored: np.ndarray, current: np.ndarray, kind: str, order: float = 2.0) -> np.ndarray:
    """Per unroll, how far [n, T, F] stored features are from the current ones, averaged over steps:
    'ln_norm' the L-`order` norm of the difference, 'cos_dist' 1 - cosine similarity, 'kl_div'
    KL(stored || current) of the softmax of each (for features that are policy logits)."""
    stored, current = stored.astype(np.float64), current.astype(np.float64)
    if kind == "ln_norm":
        per_step = np.sum(np.abs(stored - current) ** order, axis=-1) ** (1.0 / order)
    elif kind == "cos_dist":
        norms = np.linalg.norm(stored, axis=-1) * np.linalg.norm(current, axis=-1)
        per_step = 1.0 - np.sum(stored * current, axis=-1) / np.maximum(norms, 1e-12)
    elif kind == "kl_div":
        log_p, log_q = log_softmax(stored), log_softmax(current)
        per_step = np.sum(np.exp(log_p) * (log_p - log_q), axis=-1)
    else:
        raise ValueError(f"unknown distance {kind!r}; use {', '.join(DISTANCES)}")
    return per_step.mean(axis=1)


def select_elite(distances: np.ndarray, times_sampled: np.ndarray, count: int, strategy: str) -> np.ndarray:
    """Indices of the `count` candidates `strategy` picks (module docstring); needs count <= candidates."""
    if count > len(distances):
        raise ValueError(f"{len(distances)} candidates cannot give {count} distinct unrolls")
    if strategy == "lowest":
        return np.argsort(distances, kind="stable")[:count]
    if strategy == "lowest_least_sampled":
        return np.lexsort((distances, times_sampled))[:count]
    if strategy not in ("strata", "strata_least_sampled"):
        raise ValueError(f"unknown elite strategy {strategy!r}; use {', '.join(STRATEGIES)}")
    strata = np.array_split(np.argsort(distances, kind="stable"), count)
    if strategy == "strata":
        return np.array([stratum[0] for stratum in strata])
    return np.array([stratum[np.lexsort((distances[stratum], times_sampled[stratum]))[0]] for stratum in strata])


@gin.configurable(denylist=["ring", "count", "rng", "encode", "total_updates", "features"])
class EliteSampler(Sampler):
    """Elite sampling of stored unrolls (module docstring). `encode(unrolls)` gives the current
    policy's features [n, T+1, F] for stored unrolls.

    Settings:
        `strategy`: 'lowest', 'strata', 'lowest_least_sampled' or 'strata_least_sampled' (the original's
            strategies 1-4; 'lowest').
        `distance`: 'ln_norm', 'cos_dist' or 'kl_div' ('ln_norm'; 'kl_div' only with
            `VTraceAgent.replay_features = 'policy_logits'`).
        `norm_order`: n of 'ln_norm' (2.0).
        `lambda_batch_multiplier`: candidates per unroll drawn, lambda (2.0); annealed to 1 (uniform).
        `alfa_annealing_factor`: lambda reaches 1 after this fraction of the run's updates (1.0).
        `prefetch`: batches of candidates prepared ahead on a thread of their own (2; 0: prepared on the
            training thread when asked, as the tests do).
    """

    def __init__(self, ring, count: int, rng: np.random.Generator, encode: Callable[[Unrolls], np.ndarray],
                 total_updates: int, features: str = "core", strategy: str = "lowest", distance: str = "ln_norm",
                 norm_order: float = 2.0, lambda_batch_multiplier: float = 2.0, alfa_annealing_factor: float = 1.0,
                 prefetch: int = 2):
        if strategy not in STRATEGIES:
            raise ValueError(f"EliteSampler.strategy={strategy!r} is unknown; use {', '.join(STRATEGIES)}")
        if distance not in DISTANCES:
            raise ValueError(f"EliteSampler.distance={distance!r} is unknown; use {', '.join(DISTANCES)}")
        if distance == "kl_div" and features != "policy_logits":
            raise ValueError("EliteSampler.distance='kl_div' compares policies: set VTraceAgent.replay_features = "
                             "'policy_logits', or use 'ln_norm' or 'cos_dist'")
        if lambda_batch_multiplier < 1:
            raise ValueError(f"EliteSampler.lambda_batch_multiplier={lambda_batch_multiplier:g} draws fewer "
                             "candidates than unrolls; use 1 (uniform) or more")
        require_positive("EliteSampler", norm_order=norm_order, alfa_annealing_factor=alfa_annealing_factor)
        if prefetch < 0:
            raise ValueError(f"EliteSampler.prefetch={prefetch} must be 0 (prepare on demand) or more")
        if encode is None:
            raise ValueError("elite sampling needs the policy's features; the agent gave no encoder")
        self.ring, self.count, self.rng, self.encode = ring, count, rng, encode
        self.total_updates = total_updates
        self.strategy, self.distance, self.norm_order = strategy, distance, norm_order
        self.multiplier, self.annealing = lambda_batch_multiplier, alfa_annealing_factor
        self.prefetch = prefetch
        self._prepared = Handoff(max(prefetch, 1))
        self._thread: threading.Thread | None = None
        self._update = 0  # the latest update the training thread asked at; the thread anneals by it

    def prepare(self, update: int) -> Drawn:
        """One batch's choice: candidates, their distances under the current policy, the strategy's pick."""
        lam = annealed_multiplier(self.multiplier, update, self.total_updates, self.annealing)
        with self.ring.lock:  # one consistent view of the candidates and their counts (a reentrant lock)
            positions = self.rng.choice(len(self.ring), min(int(np.ceil(lam * self.count)), len(self.ring)),
                                        replace=False)
            times_sampled = self.ring.times_sampled[positions].copy()
            candidates, inserted_at, generations = self.ring.take(positions)
        distances = off_policy_distances(candidates["features"], self.encode(candidates), self.distance,
                                         self.norm_order)
        chosen = select_elite(distances, times_sampled, self.count, self.strategy)
        return Drawn({k: v[chosen] for k, v in candidates.items()}, positions[chosen], inserted_at[chosen],
                     generations[chosen], metrics={"distance": float(distances[chosen].mean()),
                                                   "candidate_distance": float(distances.mean()), "lambda": lam})

    def draw(self, update: int, fresh: Unrolls) -> Drawn | None:
        """The next prepared choice; None once closed."""
        if not self.prefetch:
            return self.prepare(update)
        self._update = update
        if self._thread is None:  # the first call
            self._thread = threading.Thread(target=self._prepare_ahead, name="elite-candidates", daemon=True)
            self._thread.start()
        try:
            return self._prepared.get()
        except Exception as error:
            raise RuntimeError(f"elite sampling's candidate thread failed: {error}") from error

    def _prepare_ahead(self) -> None:
        try:
            while self._prepared.put(self.prepare(self._update)):
                pass
        except Exception as error:  # handed to the training thread, which raises it
            self._prepared.fail(error)

    def close(self) -> None:
        self._prepared.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
