"""SAC's networks: a tanh-Gaussian actor with a state-dependent standard deviation, and Q(x, a)
critics, all MLPs (CleanRL's and SEED RL's 256 x 256 ReLU for MuJoCo)."""
from collections.abc import Sequence

import keras
import tensorflow as tf

from learner.networks import AgentOutput, EnvOutput

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0  # the bounds CleanRL and SEED RL squash log-std into


def _mlp(hidden_sizes: Sequence[int], outputs: int, name: str) -> keras.Sequential:
    return keras.Sequential([keras.layers.Dense(h, activation="relu") for h in hidden_sizes] +
                            [keras.layers.Dense(outputs)], name=name)


class _MLPModule(tf.Module):
    """A module around one Keras MLP, whose variables tf.Module does not find by itself (Keras 3)."""

    _mlp: keras.Sequential

    @property
    def trainable_variables(self):
        return self._mlp.trainable_variables

    @property
    def variables(self):
        return self._mlp.variables


def _flatten(observations):
    return tf.reshape(tf.cast(observations, tf.float32), [tf.shape(observations)[0], -1])


class SoftActor(_MLPModule):
    """x -> [mean, log_std] params of a tanh-Gaussian over actions normalised to [-1, 1]
    (learner/distributions.py's TanhGaussian), called as the learner calls every policy network."""

    state_size = 0

    def __init__(self, action_size: int, observation_shape: Sequence[int], observation_dtype: str,
                 hidden_sizes: Sequence[int]):
        super().__init__(name="soft_actor")
        self.observation_shape, self.observation_dtype = tuple(observation_shape), observation_dtype
        self.action_size = action_size
        self._mlp = _mlp(hidden_sizes, 2 * action_size, "actor")
        self(None, _zero_env_output(self.observation_shape, observation_dtype), None)

    @property
    def prev_action_spec(self) -> tf.TensorSpec:
        return tf.TensorSpec([None, self.action_size], tf.float32)

    def params(self, observations):
        mean, log_std = tf.split(self._mlp(_flatten(observations)), 2, axis=-1)
        # tanh into [min, max] (as CleanRL): a smooth bound instead of a clip that stops the gradient.
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (tf.tanh(log_std) + 1.0)
        return tf.concat([mean, log_std], axis=-1)

    def __call__(self, prev_actions, env_outputs, core_state):
        params = self.params(env_outputs.observation)
        return AgentOutput(params, tf.zeros(tf.shape(params)[:1])), core_state


class QNetwork(_MLPModule):
    """Q(x, a) from the observation and the normalised action concatenated."""

    def __init__(self, action_size: int, observation_shape: Sequence[int], hidden_sizes: Sequence[int], name: str):
        super().__init__(name=name)
        self._mlp = _mlp(hidden_sizes, 1, name)
        self(tf.zeros([1, *observation_shape]), tf.zeros([1, action_size]))

    def __call__(self, observations, actions):
        return tf.squeeze(self._mlp(tf.concat([_flatten(observations), actions], axis=-1)), -1)


def _zero_env_output(observation_shape, dtype):
    return EnvOutput(tf.zeros([1]), tf.zeros([1], tf.bool), tf.zeros([1, *observation_shape], dtype))
