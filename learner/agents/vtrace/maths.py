"""V-trace off-policy targets and the IMPALA actor-critic losses.

Espeholt et al. 2018, "IMPALA". Tensors are time-major: [T, B] for the T
transitions of an unroll of T+1 steps. Two masks carry the episode structure
that gymnasium's next-step autoreset creates:

- `discounts[t]` is gamma * (1 - terminated[t+1]): zero when the action at t
  ended the episode, so a truncated episode still bootstraps from the value of
  its final observation.
- `valid[t]` is 1 - done[t]: the step after an episode's final observation only
  resets the env, so the "transition" that starts at a final observation is
  not one. Its target is its own value and nothing flows across it.
"""
from typing import NamedTuple

import tensorflow as tf

from learner.agents.policy_losses import backward_scan, clipped_surrogate_loss, masked_mean  # noqa: F401  (callers use it)


class VTraceReturns(NamedTuple):
    vs: tf.Tensor  # [T, B] value targets
    pg_advantages: tf.Tensor  # [T, B]: IMPALA's, weighted by the clipped importance ratio
    advantages: tf.Tensor  # [T, B]: r_s + gamma v_{s+1} - V(x_s), unweighted (a clipped surrogate weighs them)


def vtrace_returns(log_rhos, discounts, rewards, values, bootstrap_value, valid,
                   clip_rho_threshold=1.0, clip_c_threshold=1.0, clip_pg_rho_threshold=1.0,
                   lambda_=1.0) -> VTraceReturns:
    """V-trace targets v_s and policy-gradient advantages; no gradient flows through them."""
    log_rhos, discounts, rewards, values, bootstrap_value, valid = [
        tf.stop_gradient(tf.convert_to_tensor(x, tf.float32))
        for x in (log_rhos, discounts, rewards, values, bootstrap_value, valid)]
    rhos = tf.exp(log_rhos)
    clipped_rhos = tf.minimum(clip_rho_threshold, rhos)  # rho_t = min(rho_bar, pi/mu)
    cs = lambda_ * tf.minimum(clip_c_threshold, rhos)  # c_i = lambda min(c_bar, pi/mu)
    values_t_plus_1 = tf.concat([values[1:], bootstrap_value[None]], axis=0)
    # delta_t V = rho_t (r_t + gamma V(x_{t+1}) - V(x_t))   (IMPALA eq. 1)
    deltas = valid * clipped_rhos * (rewards + discounts * values_t_plus_1 - values)
    carry_factors = valid * discounts * cs

    # v_s - V(x_s) = delta_s V + gamma c_s (v_{s+1} - V(x_{s+1}))   (IMPALA remark 1)
    vs_minus_v = backward_scan(deltas, carry_factors)
    vs = vs_minus_v + values
    vs_t_plus_1 = tf.concat([vs[1:], bootstrap_value[None]], axis=0)
    clipped_pg_rhos = tf.minimum(clip_pg_rho_threshold, rhos)
    advantages = valid * (rewards + discounts * vs_t_plus_1 - values)
    # A_s = rho_s (r_s + gamma v_{s+1} - V(x_s))   (IMPALA eq. 4)
    pg_advantages = clipped_pg_rhos * advantages
    return VTraceReturns(tf.stop_gradient(vs), tf.stop_gradient(pg_advantages), tf.stop_gradient(advantages))


def policy_gradient_loss(logits, actions, advantages, valid):
    """-E[log pi(a_s|x_s) A_s] over the valid transitions."""
    log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=logits)
    return -masked_mean(log_probs * tf.stop_gradient(advantages), valid)


def baseline_loss(vs, values, valid):
    """1/2 E[(v_s - V(x_s))^2]."""
    return 0.5 * masked_mean(tf.square(tf.stop_gradient(vs) - values), valid)


def entropy(logits):
    """H(pi(.|x)) per step, [T, B]."""
    return -tf.reduce_sum(tf.nn.softmax(logits) * tf.nn.log_softmax(logits), axis=-1)


def kl_divergence(behaviour_logits, logits):
    """KL(mu || pi) per step, [T, B]: CLEAR's policy-cloning term (zero where pi acted itself)."""
    behaviour_log_probs = tf.nn.log_softmax(behaviour_logits)
    return tf.reduce_sum(tf.exp(behaviour_log_probs) * (behaviour_log_probs - tf.nn.log_softmax(logits)), axis=-1)


def entropy_loss(logits, valid):
    """-E[H(pi(.|x_s))]: minimising it keeps the policy exploring."""
    return -masked_mean(entropy(logits), valid)
