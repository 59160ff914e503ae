"""SAC's maths (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"): the soft
Bellman target, the policy objective and the temperature loss, on [B] tensors."""
import tensorflow as tf


def soft_q_target(rewards, discounts, next_q1, next_q2, next_log_probs, alpha):
    """y = r + discount (min(Q1', Q2')(x', a') - alpha log pi(a'|x')), a' ~ pi(.|x'); discount is 0 past
    a termination. No gradient flows into it."""
    return tf.stop_gradient(rewards + discounts * (tf.minimum(next_q1, next_q2) - alpha * next_log_probs))


def critic_loss(q1, q2, targets):
    """Both Q-networks' mean squared errors against the same target, summed."""
    return tf.reduce_mean(tf.square(q1 - targets)) + tf.reduce_mean(tf.square(q2 - targets))


def actor_loss(log_probs, q1, q2, alpha):
    """E[alpha log pi(a|x) - min(Q1, Q2)(x, a)], a ~ pi(.|x) reparameterised."""
    return tf.reduce_mean(alpha * log_probs - tf.minimum(q1, q2))


def temperature_loss(log_alpha, log_probs, target_entropy):
    """-E[alpha (log pi(a|x) + target entropy)]: alpha grows while the policy's entropy is below the
    target and shrinks above it."""
    return -tf.reduce_mean(tf.exp(log_alpha) * tf.stop_gradient(log_probs + target_entropy))


def polyak_update(targets, sources, tau):
    """target <- tau source + (1 - tau) target, variable by variable."""
    for target, source in zip(targets, sources):
        target.assign(tau * source + (1.0 - tau) * target)
