"""How each replay source of an UnrollMix picks its unrolls from the shared ring: uniformly,
by priority, or attentively (learner/data/elite.py holds elite sampling).

A sampler draws the same number of unrolls every batch (its share of the batch). `draw` returns
a `Drawn`: copies of the unrolls, the ring positions they came from, optional per-unroll loss
weights, and scalars for the progress record."""
from typing import NamedTuple

import gin
import numpy as np

from learner.data.sum_tree import Priorities
from learner.data.unrolls import Unrolls
from seed.settings import require_non_negative, require_positive


class Drawn(NamedTuple):
    unrolls: Unrolls
    positions: np.ndarray
    inserted_at: np.ndarray  # the update each came in at (its age)
    generations: np.ndarray  # its place's generation when taken (UnrollRing)
    weights: np.ndarray | None = None  # per-unroll loss weights; None: all 1
    metrics: dict[str, float] = {}


def drawn(ring, positions: np.ndarray, chosen: np.ndarray | None = None, **extra) -> Drawn:
    """The unrolls at `positions` (of those, the `chosen` indices) as one consistent Drawn."""
    unrolls, inserted_at, generations = ring.take(positions)
    if chosen is not None:
        unrolls, positions = {k: v[chosen] for k, v in unrolls.items()}, positions[chosen]
        inserted_at, generations = inserted_at[chosen], generations[chosen]
    return Drawn(unrolls, positions, inserted_at, generations, **extra)


def annealed_multiplier(multiplier: float, update: int, total_updates: int, annealing_factor: float) -> float:
    """The candidate multiplier lambda at `update`: from `multiplier` down to 1 (no choice left)
    linearly over `annealing_factor` x `total_updates` updates, as elite experience replay anneals it."""
    horizon = max(annealing_factor * total_updates, 1.0)
    return max(1.0, multiplier - (multiplier - 1.0) * update / horizon)


def mean_features(unrolls: Unrolls) -> np.ndarray:
    """Each unroll's state features averaged over its steps, [n, F]."""
    return unrolls["features"].mean(axis=1)


class Sampler:
    """What every sampler does besides `draw`: nothing, unless it keeps state of its own."""

    def inserted(self, positions: np.ndarray) -> None:
        """The ring just stored new unrolls at `positions`."""

    def state(self) -> dict[str, np.ndarray]:
        return {}

    def load_state(self, arrays: dict[str, np.ndarray]) -> None:
        pass

    def close(self) -> None:
        pass


class UniformSampler(Sampler):
    """LASER's shared replay: every stored unroll equally likely, with replacement."""

    def __init__(self, ring, count: int, rng: np.random.Generator):
        self.ring, self.count, self.rng = ring, count, rng

    def draw(self, update: int, fresh: Unrolls) -> Drawn:
        return drawn(self.ring, self.ring.uniform_positions(self.count, self.rng))


@gin.configurable(denylist=["ring", "count", "rng"])
class PrioritisedSampler(Sampler):
    """Prioritised replay of unrolls (Schaul et al. 2016, on LASER's shared replay): an unroll is drawn
    with probability proportional to priority^alpha, its priority the mean |v_s - V(x_s)| over its valid
    steps at the last update that trained on it, whichever source drew it (a new unroll gets its first
    batch's error, or the largest priority seen until then). Each drawn unroll's loss is weighted by (N P)^-beta,
    scaled to a largest weight of 1.

    Settings:
        `priority_exponent`: alpha (0.6; 0: uniform).
        `importance_exponent`: beta (0.4; 0: unweighted).
        `min_priority`: added to every error so no unroll becomes undrawable (0.001).
    """

    def __init__(self, ring, count: int, rng: np.random.Generator, priority_exponent: float = 0.6,
                 importance_exponent: float = 0.4, min_priority: float = 1e-3):
        require_non_negative("PrioritisedSampler", priority_exponent=priority_exponent,
                             importance_exponent=importance_exponent)
        require_positive("PrioritisedSampler", min_priority=min_priority)
        self.ring, self.count, self.rng = ring, count, rng
        self.beta, self.min_priority = importance_exponent, min_priority
        self.priorities = Priorities(ring.capacity, priority_exponent)

    def inserted(self, positions: np.ndarray) -> None:
        self.priorities.insert(positions)

    def feedback(self, positions: np.ndarray, errors: np.ndarray) -> None:
        self.priorities.update(positions, np.abs(errors) + self.min_priority)

    def draw(self, update: int, fresh: Unrolls) -> Drawn:
        # Leaves past the ring's size hold no unroll (priority 0); round-off could still reach the first.
        positions = np.minimum(self.priorities.sample(self.count, self.rng), len(self.ring) - 1)
        probabilities = self.priorities.probabilities(positions)
        weights = (len(self.ring) * probabilities) ** -self.beta
        return drawn(self.ring, positions, weights=weights / weights.max())

    def state(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self.priorities.state().items()}

    def load_state(self, arrays: dict[str, np.ndarray]) -> None:
        if "tree" in arrays:
            self.priorities.load_state(arrays)
        else:  # a ring saved without this source (the ring loads first): every unroll starts equal
            self.inserted(np.arange(len(self.ring)))


@gin.configurable(denylist=["ring", "count", "rng", "total_updates"])
class AttentiveSampler(Sampler):
    """Attentive experience replay (Sun, Zhou and Li, AAAI 2020): of lambda x count candidates drawn
    uniformly, keep the `count` whose states are nearest the states the policy visits now. A state is
    the feature vector its policy call stored (`VTraceAgent.replay_features`), an unroll its mean over
    its steps, and "now" is this batch's fresh unrolls: each candidate's distance is the Euclidean one to
    the nearest fresh unroll. No network runs: the features were computed when the unrolls were acted.

    Settings:
        `lambda_batch_multiplier`: candidates per unroll drawn, lambda (4.0); annealed to 1 (uniform).
        `alfa_annealing_factor`: lambda reaches 1 after this fraction of the run's updates (1.0).
    """

    def __init__(self, ring, count: int, rng: np.random.Generator, total_updates: int,
                 lambda_batch_multiplier: float = 4.0, alfa_annealing_factor: float = 1.0):
        require_positive("AttentiveSampler", alfa_annealing_factor=alfa_annealing_factor)
        if lambda_batch_multiplier < 1:
            raise ValueError(f"AttentiveSampler.lambda_batch_multiplier={lambda_batch_multiplier:g} draws fewer "
                             "candidates than unrolls; use 1 (uniform) or more")
        self.ring, self.count, self.rng, self.total_updates = ring, count, rng, total_updates
        self.multiplier, self.annealing = lambda_batch_multiplier, alfa_annealing_factor

    def draw(self, update: int, fresh: Unrolls) -> Drawn:
        lam = annealed_multiplier(self.multiplier, update, self.total_updates, self.annealing)
        positions = self.ring.uniform_positions(int(np.ceil(lam * self.count)), self.rng, replace=False)
        distances = nearest_distances(mean_features(self.ring.gather(positions)), mean_features(fresh))
        chosen = np.argsort(distances, kind="stable")[:self.count]
        return drawn(self.ring, positions, chosen, metrics={"distance": float(distances[chosen].mean()), "lambda": lam})


def nearest_distances(candidates: np.ndarray, references: np.ndarray) -> np.ndarray:
    """Each candidate's [C, F] Euclidean distance to its nearest reference [R, F]."""
    squared = (np.sum(candidates ** 2, axis=1)[:, None] - 2.0 * candidates @ references.T
               + np.sum(references ** 2, axis=1)[None, :])
    return np.sqrt(np.maximum(squared.min(axis=1), 0.0))
