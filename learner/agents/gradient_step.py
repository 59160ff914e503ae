"""The gradient step every agent's update ends with: clip by global norm, skip a non-finite
step, apply. An agent writes its loss and gradients; this owns the rest."""
from collections.abc import Callable, Sequence

import tensorflow as tf

from seed.settings import require_positive


def require_one_device(owner: str, setting: str, strategy: tf.distribute.Strategy) -> None:
    """Refuses `owner.setting` under a strategy of several replicas, in one line that says what to do."""
    if strategy.num_replicas_in_sync > 1:
        raise ValueError(f"{owner}.{setting} works on one device only, not with {strategy.num_replicas_in_sync} "
                         f"replicas; set it to False or train on one device (create_strategy.kind='none')")


class GradientStep:
    """Builds the optimizer's slots at construction (so a checkpoint restores them before the
    first update) and compiles the agent's update function once.

    `jit_compile` has XLA compile the whole update, on one device only. It is off by default
    because on CPU it measured slower (benchmarks/xla.py); measure it on your accelerator before
    turning it on. `owner` names the gin configurable the settings came from, for error messages."""

    def __init__(self, owner: str, optimizer, variables: Sequence[tf.Variable], max_gradient_norm: float,
                 jit_compile: bool = False, strategy: tf.distribute.Strategy = None):
        require_positive(owner, max_gradient_norm=max_gradient_norm)
        strategy = strategy or tf.distribute.get_strategy()
        if jit_compile:  # XLA compiles for one device: another replica's variables fail the first step.
            require_one_device(owner, "jit_compile", strategy)
        self.optimizer, self.variables = optimizer, list(variables)
        self.max_gradient_norm, self.jit_compile = max_gradient_norm, jit_compile
        with strategy.scope():
            optimizer.build(self.variables)

    def compile(self, update: Callable) -> Callable:
        """`update` as one tf.function (XLA-compiled when `jit_compile`)."""
        return tf.function(update, jit_compile=self.jit_compile)

    METRICS = ("gradient_norm", "update_applied")  # what apply() returns

    def apply(self, loss: tf.Tensor, gradients: Sequence[tf.Tensor]) -> dict[str, tf.Tensor]:
        """Inside the compiled update: clips, applies unless the loss or the norm is not finite, and
        returns METRICS: 'gradient_norm' (before clipping) and 'update_applied'."""
        gradients, norm = tf.clip_by_global_norm(list(gradients), self.max_gradient_norm)
        finite = tf.math.is_finite(loss) & tf.math.is_finite(norm)
        if finite:
            self.optimizer.apply_gradients(zip(gradients, self.variables))
        return {"gradient_norm": norm, "update_applied": finite}
