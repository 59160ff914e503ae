"""Several epochs of shuffled minibatches over one batch of unrolls (PPO's reuse of a batch),
shared by the agents that train on unrolls."""
from typing import Callable, Dict, Union

import numpy as np

# A metric that is an array over the batch's unrolls rather than a scalar (V-trace's per-unroll errors,
# prioritised replay's priorities); minibatches' arrays are put back in batch order.
PER_UNROLL_ERRORS = "per_unroll/errors"


Batch = Dict[str, np.ndarray]


def train_in_minibatches(update: Callable[[Batch], Dict[str, float]], batch: Union[Batch, Callable[[], Batch]],
                         epochs: int, minibatches: int, rng: np.random.Generator) -> Dict[str, float]:
    """Calls `update` on `epochs` x `minibatches` minibatches of whole unrolls (batch-major [B, ...]
    arrays), reshuffled every epoch; returns the steps' metrics averaged, with 'update_applied' true
    when any step was applied and 'skipped_steps' the count of non-finite steps skipped. A
    PER_UNROLL_ERRORS array comes back [B] in batch order, from each unroll's last epoch. `batch` may
    be a function that returns the batch afresh before every epoch (PPO's advantages from the values
    the network has then)."""
    epoch_batch = batch if callable(batch) else lambda: batch
    if epochs == 1 and minibatches == 1:
        return update(epoch_batch())
    steps = []
    errors = None
    for _ in range(epochs):
        this_epoch = epoch_batch()
        size = len(next(iter(this_epoch.values())))
        for indices in np.array_split(rng.permutation(size), minibatches):
            steps.append(update({k: v[indices] for k, v in this_epoch.items()}))
            if PER_UNROLL_ERRORS in steps[-1]:
                errors = np.zeros(size, np.float64) if errors is None else errors
                errors[indices] = steps[-1].pop(PER_UNROLL_ERRORS)
    # A skipped (non-finite) step's NaN must not reach the averages.
    applied = [m for m in steps if m["update_applied"]] or steps
    metrics = {k: float(np.mean([m[k] for m in applied])) for k in steps[0]}
    metrics["update_applied"] = any(m["update_applied"] for m in steps)
    metrics["skipped_steps"] = sum(not m["update_applied"] for m in steps)
    if errors is not None:
        metrics[PER_UNROLL_ERRORS] = errors
    return metrics
