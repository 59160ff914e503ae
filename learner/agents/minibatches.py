"""Several epochs of shuffled minibatches over one batch of unrolls (PPO's reuse of a batch),
shared by the agents that train on unrolls."""
from collections.abc import Callable

import numpy as np

# Metrics under this prefix are arrays over a minibatch's unrolls (their last axis) rather than
# scalars; each epoch's are put back in batch order (every epoch trains every unroll once).
PER_UNROLL = "per_unroll/"
PER_UNROLL_ERRORS = PER_UNROLL + "errors"  # V-trace's per-unroll errors, prioritised replay's priorities, [B]
PER_UNROLL_VALUES = PER_UNROLL + "values"  # PPO's values of each trained step, [T, B]

Batch = dict[str, np.ndarray]


def train_in_minibatches(update: Callable[[Batch], dict[str, float]],
                         batch: Batch | Callable[[dict[str, np.ndarray]], Batch],
                         epochs: int, minibatches: int, rng: np.random.Generator) -> dict[str, float]:
    """Calls `update` on `epochs` x `minibatches` minibatches of whole unrolls (time-major [T, B, ...]
    arrays, split along B), reshuffled every epoch; returns the steps' metrics averaged, with
    'update_applied' true when any step was applied and 'skipped_steps' the count of non-finite steps
    skipped. PER_UNROLL arrays come back [..., B] in batch order, from the last epoch. `batch` may be a
    function that makes the batch afresh before every epoch from the PER_UNROLL arrays of the epochs so
    far (empty before the first): PPO's advantages from the values its minibatches computed in the
    previous epoch."""
    epoch_batch = batch if callable(batch) else lambda per_unroll: batch
    per_unroll: dict[str, np.ndarray] = {}
    if epochs == 1 and minibatches == 1:
        return update(epoch_batch(per_unroll))
    steps = []
    for _ in range(epochs):
        this_epoch = epoch_batch(per_unroll)
        per_unroll = {}  # fresh arrays: what the batch function was handed stays as it was
        size = next(iter(this_epoch.values())).shape[1]
        for indices in epoch_minibatches(size, minibatches, rng):
            steps.append(update({k: v[:, indices] for k, v in this_epoch.items()}))
            for key in [k for k in steps[-1] if k.startswith(PER_UNROLL)]:
                rows = np.asarray(steps[-1].pop(key))
                if key not in per_unroll:
                    per_unroll[key] = np.zeros(rows.shape[:-1] + (size,), np.float64)
                per_unroll[key][..., indices] = rows
    return {**average_steps(steps), **per_unroll}


def epoch_minibatches(size: int, minibatches: int, rng: np.random.Generator):
    """One epoch's minibatches: row indices of a batch of `size` unrolls, shuffled, in `minibatches` parts."""
    return np.array_split(rng.permutation(size), minibatches)


def average_steps(steps) -> dict[str, float]:
    """Gradient steps' scalar metrics averaged over the applied steps, with 'update_applied' true when
    any step was applied and 'skipped_steps' the count of non-finite steps skipped."""
    # A skipped (non-finite) step's NaN must not reach the averages.
    applied = [m for m in steps if m["update_applied"]] or steps
    metrics = {k: float(np.mean([m[k] for m in applied])) for k in steps[0]}
    metrics["update_applied"] = any(m["update_applied"] for m in steps)
    metrics["skipped_steps"] = sum(not m["update_applied"] for m in steps)
    return metrics
