"""Action distributions over a policy head's output ("params"), one per action kind.

A policy network emits one params tensor per step; the distribution turns it into samples,
log-probabilities and entropies. What the unrolls store is the sample; what the env receives
is `env_action(sample)`, which for continuous actions respects the task's bounds:

- `Categorical`: params are logits [B, n]; actions int32 [B].
- `Gaussian`: params are [mean, log_std] concatenated, [B, 2A]; the sample is unbounded and the env
  gets it clipped to the bounds (CleanRL's and SEED RL's PPO on MuJoCo do the same), so the
  log-probability of what was sampled stays exact.
- `TanhGaussian`: the same params; the sample u is unbounded and the env gets
  low + (tanh(u) + 1) (high - low) / 2, with the change-of-variables term in `log_prob`
  (Haarnoja et al. 2018, appendix C), as SAC and PPO's squashed option use it.
"""
import math

import numpy as np
import tensorflow as tf

from seed.specs import ActionSpec

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class Categorical:
    def __init__(self, num_actions: int):
        self.num_actions = num_actions
        self.param_size = num_actions
        self.action_shape = ()
        self.action_dtype = tf.int32

    def sample(self, params):
        return tf.random.categorical(params, 1, dtype=tf.int32)[:, 0]

    def log_prob(self, params, actions):
        return -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=params)

    def entropy(self, params):
        return -tf.reduce_sum(tf.nn.softmax(params) * tf.nn.log_softmax(params), axis=-1)

    def mode(self, params):
        return tf.argmax(params, axis=-1, output_type=tf.int32)

    def env_action(self, actions):
        return actions


class Gaussian:
    """A diagonal Gaussian; `low`/`high` are the env's bounds (flattened)."""
    squash = False

    def __init__(self, low, high):
        self.low = tf.constant(np.asarray(low, np.float32))
        self.high = tf.constant(np.asarray(high, np.float32))
        self.action_size = int(self.low.shape[0])
        self.param_size = 2 * self.action_size
        self.action_shape = (self.action_size,)
        self.action_dtype = tf.float32

    def split(self, params):
        mean, log_std = tf.split(params, 2, axis=-1)
        return mean, log_std

    def sample(self, params):
        mean, log_std = self.split(params)
        return mean + tf.exp(log_std) * tf.random.normal(tf.shape(mean))

    def gaussian_log_prob(self, params, u):
        mean, log_std = self.split(params)
        z = (u - mean) * tf.exp(-log_std)
        return tf.reduce_sum(-0.5 * tf.square(z) - log_std - _HALF_LOG_2PI, axis=-1)

    def log_prob(self, params, actions):
        return self.gaussian_log_prob(params, actions)

    def entropy(self, params):
        _, log_std = self.split(params)
        return tf.reduce_sum(log_std + 0.5 + _HALF_LOG_2PI, axis=-1)

    def mode(self, params):
        return self.split(params)[0]

    def env_action(self, actions):
        return tf.clip_by_value(actions, self.low, self.high)


class TanhGaussian(Gaussian):
    """A Gaussian squashed by tanh into the bounds; the sample kept is the pre-squash u."""
    squash = True

    def log_prob(self, params, actions):
        # log|d tanh(u)/du| = log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), stable for large |u|;
        # scaling to the bounds adds log((high - low) / 2) per dimension.
        log_det = 2.0 * (math.log(2.0) - actions - tf.nn.softplus(-2.0 * actions))
        scale = tf.math.log((self.high - self.low) / 2.0)
        return self.gaussian_log_prob(params, actions) - tf.reduce_sum(log_det + scale, axis=-1)

    def entropy(self, params):
        """No closed form: the one-sample estimate -log pi(u) at a fresh reparameterised sample, so its
        gradient reaches the params through the sample too (with the sample held fixed, the gradient's
        expectation would be zero and an entropy bonus would do nothing)."""
        return -self.log_prob(params, self.sample(params))

    def env_action(self, actions):
        return scale_to_bounds(tf.tanh(actions), self.low, self.high)


def scale_to_bounds(unit, low, high):
    """Actions in [-1, 1] (numpy or TensorFlow) mapped linearly onto [low, high]."""
    return low + (unit + 1.0) * (high - low) / 2.0


def for_action_spec(spec: ActionSpec, squash: bool = False):
    """The distribution for an env's actions: categorical for discrete ones, a Gaussian (clipped to
    the bounds, or with `squash` a tanh-Gaussian scaled to them) for continuous ones."""
    if spec.is_discrete:
        return Categorical(spec.num_actions)
    if len(spec.shape) != 1:
        raise ValueError(f"continuous actions of shape {spec.shape}; seed's policies take a vector (A,)")
    if not (np.all(np.isfinite(spec.low)) and np.all(np.isfinite(spec.high))):
        raise ValueError("continuous actions with unbounded limits; seed's policies need finite Box bounds")
    return (TanhGaussian if squash else Gaussian)(spec.low, spec.high)
