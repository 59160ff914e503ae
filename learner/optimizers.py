"""Optimizer and learning-rate schedule, both set from gin."""
import gin
import keras
import tensorflow as tf

from seed.settings import require_non_negative, require_positive

OPTIMIZERS = ("adam", "rmsprop")
LR_DECAYS = ("none", "linear", "polynomial")


@gin.configurable
def create_optimizer(num_training_steps: int, kind: str = "adam", learning_rate: float = 6e-4,
                     lr_decay: str = "linear", lr_decay_power: float = 2.0, final_learning_rate: float = 0.0,
                     epsilon: float = 1e-8, rmsprop_rho: float = 0.99, rmsprop_momentum: float = 0.0):
    """Adam or RMSProp with a learning-rate schedule over the run's `num_training_steps` gradient steps.

    Each bundled config's own values are listed in the parameter reference (docs/parameters.md).

    Settings:
        `kind`: the optimizer, 'adam' or 'rmsprop' ('adam').
        `learning_rate`: the step size at the first gradient step (6e-4).
        `lr_decay`: how the learning rate goes to `final_learning_rate` over the training steps: 'linear',
            'polynomial' (with `lr_decay_power`) or 'none' (it stays at `learning_rate`) ('linear'). The steps
            span training.schedule_frames (else the budget).
        `lr_decay_power`: exponent of the 'polynomial' decay (2.0); unused otherwise.
        `final_learning_rate`: the learning rate at the last training step (0.0).
        `epsilon`: the optimizer's epsilon, added to the denominator for stability (1e-8).
        `rmsprop_rho`: RMSProp's discount of the moving average of squared gradients (0.99); unused by Adam.
        `rmsprop_momentum`: RMSProp's momentum (0.0); unused by Adam.
    """
    require_positive("create_optimizer", learning_rate=learning_rate, epsilon=epsilon)
    require_non_negative("create_optimizer", final_learning_rate=final_learning_rate, lr_decay_power=lr_decay_power)
    learning_rate, final_learning_rate = float(learning_rate), float(final_learning_rate)  # Keras refuses ints
    if lr_decay not in LR_DECAYS:
        raise ValueError(f"unknown lr_decay {lr_decay!r}; use one of {LR_DECAYS}")
    if lr_decay == "none":
        schedule = learning_rate
    else:
        schedule = keras.optimizers.schedules.PolynomialDecay(
            learning_rate, max(1, num_training_steps), final_learning_rate,
            power=1.0 if lr_decay == "linear" else lr_decay_power)
    if kind == "adam":
        return keras.optimizers.Adam(schedule, epsilon=epsilon)
    if kind == "rmsprop":
        return keras.optimizers.RMSprop(schedule, rho=rmsprop_rho, momentum=rmsprop_momentum, epsilon=epsilon)
    raise ValueError(f"unknown optimizer {kind!r}; use one of {OPTIMIZERS}")


def current_learning_rate(optimizer) -> float:
    lr = optimizer.learning_rate
    value = lr(optimizer.iterations) if callable(lr) else lr
    return float(tf.convert_to_tensor(value).numpy())  # also for a mirrored variable
