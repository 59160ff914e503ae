"""R2D2's value rescaling and n-step double-Q targets.

Kapturowski et al. 2019, "Recurrent Experience Replay in Distributed RL";
the rescaling is from Pohlen et al. 2018 ("Observe and Look Further").
Tensors are time-major [T+1, B] over the steps of a sequence, with the same
episode conventions as learner/agents/vtrace/maths.py: `terminated[i]`/`truncated[i]` mark
step i as an episode's final observation, the step after it is a reset step,
and the transition that starts at a final observation is not a transition.
"""
import tensorflow as tf

RESCALE_EPSILON = 1e-3


def h(x, epsilon=RESCALE_EPSILON):
    """h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x   (Pohlen et al. eq. 3)."""
    return tf.sign(x) * (tf.sqrt(tf.abs(x) + 1.0) - 1.0) + epsilon * x


def h_inv(x, epsilon=RESCALE_EPSILON):
    """The exact inverse of h (Pohlen et al. prop. A.2)."""
    root = (tf.sqrt(1.0 + 4.0 * epsilon * (tf.abs(x) + 1.0 + epsilon)) - 1.0) / (2.0 * epsilon)
    return tf.sign(x) * (tf.square(root) - 1.0)


def n_step_targets(rewards, terminated, truncated, bootstrap_values, discount: float, n: int,
                   epsilon=RESCALE_EPSILON):
    """Rescaled n-step targets y_t = h(sum_k gamma^k r_{t+k+1} + gamma^m h^-1(q_boot_{t+m})).

    rewards[i] is the reward that arrived with step i; bootstrap_values[i] is
    Q_target(x_i, argmax_a Q_online(x_i, a)) (double Q-learning), already in
    rescaled space. The window of transition t stops early at an episode's
    final observation (bootstrapping from it if truncated, not at all if
    terminated) and at the sequence's last step. Returns [T, B] for
    transitions 0..T-1.
    """
    rewards = tf.convert_to_tensor(rewards, tf.float32)
    terminated = tf.cast(terminated, tf.bool)
    done = terminated | tf.cast(truncated, tf.bool)
    values = h_inv(tf.convert_to_tensor(bootstrap_values, tf.float32), epsilon)
    num_transitions = tf.shape(rewards)[0] - 1
    returns = tf.zeros_like(rewards[:-1])
    scale = tf.ones_like(rewards[:-1])  # gamma^k while the window is open, 0 once it has closed
    open_ = tf.ones_like(rewards[:-1], dtype=tf.bool)
    bootstrap = tf.zeros_like(rewards[:-1])
    last = tf.shape(rewards)[0] - 1
    for k in range(1, n + 1):
        index = tf.minimum(tf.range(num_transitions) + k, last)
        r, term, d, v = (tf.gather(x, index) for x in (rewards, terminated, done, values))
        returns += tf.where(open_, scale * r, 0.0)
        scale = scale * discount
        closes = open_ & (d | (k == n) | (tf.range(num_transitions) + k >= last)[:, None])
        bootstrap += tf.where(closes & ~term, scale * v, 0.0)
        open_ = open_ & ~closes
    return h(returns + bootstrap, epsilon)
