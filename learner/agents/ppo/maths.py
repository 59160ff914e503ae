"""PPO's maths (Schulman et al. 2017): generalised advantage estimation and the value loss.

Time-major [T, B] tensors over the T transitions of an unroll of T+1 steps, with V-trace's two
masks (learner/agents/vtrace/maths.py): `discounts[t]` is gamma * (1 - terminated[t+1]), so a
truncated episode bootstraps from its final observation's value, and `valid[t]` is 1 - done[t],
so the reset "transition" that starts at a final observation is none and nothing flows across it.
"""
from typing import NamedTuple

import tensorflow as tf

from learner.agents.policy_losses import backward_scan, masked_mean


class Advantages(NamedTuple):
    advantages: tf.Tensor  # [T, B] GAE(lambda)
    returns: tf.Tensor  # [T, B] advantages + values: the value targets


def gae(rewards, values, bootstrap_value, discounts, valid, lambda_) -> Advantages:
    """A_t = delta_t + gamma_t lambda A_{t+1}, delta_t = r_t + gamma_t V(x_{t+1}) - V(x_t) (Schulman et
    al. 2016), from the values the behaviour policy computed when it acted; no gradient flows."""
    rewards, values, bootstrap_value, discounts, valid = [
        tf.stop_gradient(tf.convert_to_tensor(x, tf.float32)) for x in (rewards, values, bootstrap_value, discounts,
                                                                         valid)]
    next_values = tf.concat([values[1:], bootstrap_value[None]], axis=0)
    deltas = valid * (rewards + discounts * next_values - values)
    factors = valid * discounts * lambda_

    advantages = backward_scan(deltas, factors)
    return Advantages(advantages, advantages + values)


def value_loss(values, returns, behaviour_values, valid, clip_epsilon=0.0):
    """1/2 E[(V(x) - R)^2]; with `clip_epsilon` > 0 the larger of that and the error of V clipped to
    within epsilon of the behaviour value (PPO2's value clipping)."""
    returns = tf.stop_gradient(returns)
    loss = tf.square(values - returns)
    if clip_epsilon:
        clipped = behaviour_values + tf.clip_by_value(values - behaviour_values, -clip_epsilon, clip_epsilon)
        loss = tf.maximum(loss, tf.square(clipped - returns))
    return 0.5 * masked_mean(loss, valid)
