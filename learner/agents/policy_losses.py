"""Loss pieces every policy-gradient agent uses (V-trace, PPO): the episode masks of time-major
unrolls, masked means over their valid steps, the backward scan behind V-trace's targets and GAE,
advantage normalisation, PPO's clipped surrogate and the entropy bonus's schedule."""
import tensorflow as tf


def episode_masks(terminated, truncated, discount):
    """(discounts, valid), [T, B] from time-major [T+1, B] end flags: discounts[t] = gamma (1 -
    terminated[t+1]), so a truncated episode bootstraps from its final observation's value; valid[t] =
    1 - done[t], so the reset "transition" that starts at a final observation is none."""
    done = tf.cast(terminated | truncated, tf.float32)
    return discount * (1.0 - tf.cast(terminated[1:], tf.float32)), 1.0 - done[:-1]


def masked_mean(x, valid):
    """The mean of x over the mask's weight (a 0/1 mask, or loss weights below 1: only an empty mask
    divides by 1 instead)."""
    total = tf.reduce_sum(valid)
    return tf.reduce_sum(x * valid) / tf.where(total > 0, total, 1.0)


def backward_scan(deltas, factors):
    """x_t = deltas_t + factors_t x_{t+1} from x_T = 0, over time-major [T, B]: V-trace's v_s - V(x_s)
    and GAE's advantages are both this recursion, with different deltas and factors."""
    def backward(acc, inputs):
        delta, factor = inputs
        return delta + factor * acc

    return tf.scan(backward, (deltas, factors), initializer=tf.zeros_like(deltas[0]), reverse=True)


def masked_std(x, valid, mean=None):
    """The standard deviation of x over the mask's weight (about `mean` where the caller has it)."""
    mean = masked_mean(x, valid) if mean is None else mean
    return tf.sqrt(masked_mean(tf.square(x - mean), valid))


def normalize_advantages(x, valid, center: bool, scale=None, epsilon=1e-8):
    """x divided by its standard deviation over the valid steps, or by `scale` where one is given (a
    deviation measured over more steps than x holds); with `center` its mean is subtracted first (PPO's
    per-minibatch standardisation), without it kept (V-trace's advantages already have the baseline
    subtracted, and shifting them would bias the gradient)."""
    mean = masked_mean(x, valid)
    if scale is None:
        scale = masked_std(x, valid, mean)
    return valid * (x - mean if center else x) / (scale + epsilon)


def clipped_surrogate_loss(log_rhos, advantages, valid, epsilon):
    """PPO's clipped objective, -E[min(rho A, clip(rho, 1-eps, 1+eps) A)] with rho = pi/mu against the
    behaviour policy: once pi has moved eps away from mu on a step, that step stops pushing it further,
    which is what makes several passes over the same unrolls safe."""
    rhos = tf.exp(log_rhos)
    advantages = tf.stop_gradient(advantages)
    surrogate = tf.minimum(rhos * advantages, tf.clip_by_value(rhos, 1.0 - epsilon, 1.0 + epsilon) * advantages)
    return -masked_mean(surrogate, valid)


ENTROPY_DECAYS = ("none", "linear")


def check_entropy_decay(owner: str, decay: str) -> str:
    if decay not in ENTROPY_DECAYS:
        raise ValueError(f"unknown {owner}.entropy_decay {decay!r}; use one of {ENTROPY_DECAYS}")
    return decay


def entropy_weight(initial: float, final: float, decay: str, progress):
    """The entropy bonus's weight once the share `progress` of the run's gradient steps is taken: `initial`
    throughout with 'none', from `initial` to `final` in a straight line with 'linear' (held past the end)."""
    if decay == "none":
        return tf.constant(initial, tf.float32)
    fraction = tf.clip_by_value(tf.cast(progress, tf.float32), 0.0, 1.0)
    return initial + (final - initial) * fraction
