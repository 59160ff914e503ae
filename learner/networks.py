"""Policy/value networks for the learner: torsos, an optional LSTM core, heads.

One call signature for every agent: `agent(prev_actions, env_outputs, core_state)`
on one step ([B, ...] tensors), and `agent.unroll(...)` on a time-major unroll
([T, B, ...]) that resets the core state where `env_outputs.first` is set.
V-trace uses ActorCriticNetwork, R2D2 DuelingQNetwork.
Observations arrive stacked by the learner: [*observation_shape, num_stacked].
"""
from collections.abc import Sequence
from typing import NamedTuple

import gin
import keras
import tensorflow as tf

from learner.normalization import ObservationNormalizer


class EnvOutput(NamedTuple):
    reward: tf.Tensor  # clipped reward of the previous action, [B] or [T, B]
    first: tf.Tensor  # bool: first step of an episode (state and prev action reset)
    observation: tf.Tensor  # stacked frames


class AgentOutput(NamedTuple):
    policy_logits: tf.Tensor
    baseline: tf.Tensor
    # What the policy head saw: the torso's (or the LSTM's) output, [B, F]. Replay sources that compare
    # states (elite, attentive) store it from the acting call, so acting computes nothing extra for them.
    features: tf.Tensor | None = None


def nature_cnn(initializer=lambda: "glorot_uniform") -> keras.Sequential:
    """Mnih et al. 2015: three convolutions and a 512-unit layer."""
    return keras.Sequential([
        keras.layers.Conv2D(32, 8, strides=4, activation="relu", kernel_initializer=initializer()),
        keras.layers.Conv2D(64, 4, strides=2, activation="relu", kernel_initializer=initializer()),
        keras.layers.Conv2D(64, 3, strides=1, activation="relu", kernel_initializer=initializer()),
        keras.layers.Flatten(),
        keras.layers.Dense(512, activation="relu", kernel_initializer=initializer()),
    ], name="nature_cnn")


class _ResidualBlock(keras.layers.Layer):
    def __init__(self, channels: int, initializer=lambda: "glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.conv1 = keras.layers.Conv2D(channels, 3, padding="same", kernel_initializer=initializer())
        self.conv2 = keras.layers.Conv2D(channels, 3, padding="same", kernel_initializer=initializer())

    def call(self, x):
        return x + self.conv2(tf.nn.relu(self.conv1(tf.nn.relu(x))))


def impala_resnet(initializer=lambda: "glorot_uniform", channels: Sequence[int] = (16, 32, 32)) -> keras.Sequential:
    """IMPALA's deep torso: per stack a conv, a max-pool and two residual blocks (15 convs)."""
    layers = []
    for c in channels:
        layers += [keras.layers.Conv2D(c, 3, padding="same", kernel_initializer=initializer()),
                   keras.layers.MaxPooling2D(3, strides=2, padding="same"),
                   _ResidualBlock(c, initializer), _ResidualBlock(c, initializer)]
    layers += [keras.layers.ReLU(), keras.layers.Flatten(),
               keras.layers.Dense(256, activation="relu", kernel_initializer=initializer())]
    return keras.Sequential(layers, name="impala_resnet")


MLP_ACTIVATIONS = ("tanh", "relu")


def mlp(initializer=lambda: "glorot_uniform", hidden_sizes: Sequence[int] = (64, 64),
        activation: str = "tanh") -> keras.Sequential:
    return keras.Sequential([keras.layers.Flatten()] +
                            [keras.layers.Dense(h, activation=activation, kernel_initializer=initializer())
                             for h in hidden_sizes], name="mlp")


INITIALIZATIONS = ("glorot", "orthogonal")


def _initializer(initialization: str, gain: float):
    """A factory of kernel initializers, one per layer: Keras' default (Glorot uniform), or orthogonal
    weights scaled by `gain` (PPO's usual choice). One per layer because a Keras initializer object
    fixes its seed when made: shared, it gives every same-shaped kernel the same weights."""
    if initialization == "glorot":
        return lambda: "glorot_uniform"
    return lambda: keras.initializers.Orthogonal(gain)


TORSOS = {"nature_cnn": nature_cnn, "impala_resnet": impala_resnet, "mlp": mlp}


class RecurrentNetwork(tf.Module):
    """Torso -> [LSTM fed with previous action one-hot and reward] -> heads.

    The torso defaults to the Nature CNN for image stacks and an MLP otherwise.

    Subclasses build `self._head_layers` and map core features to their outputs in `_heads`.
    """

    def __init__(self, name: str, num_actions: int, observation_shape: Sequence[int], observation_dtype: str,
                 torso: str | None, lstm_units: int, mlp_hidden_sizes: Sequence[int],
                 initialization: str = "glorot", separate_critic: bool = False,
                 normalize_observations: bool = False, observation_clip: float = 10.0,
                 mlp_activation: str = "tanh"):
        super().__init__(name=name)
        if mlp_activation not in MLP_ACTIVATIONS:
            raise ValueError(f"unknown mlp_activation {mlp_activation!r}; use one of {MLP_ACTIVATIONS}")
        if separate_critic and lstm_units:
            raise ValueError(f"{type(self).__name__}.separate_critic needs a feed-forward network; "
                             "set lstm_units = 0 or separate_critic = False")
        if initialization not in INITIALIZATIONS:
            raise ValueError(f"unknown initialization {initialization!r}; use one of {INITIALIZATIONS}")
        if torso is None:  # the usual choice for the observation's kind
            torso = "nature_cnn" if len(observation_shape) in (3, 4) else "mlp"
        if torso not in TORSOS:
            raise ValueError(f"unknown torso {torso!r}; use one of {sorted(TORSOS)}")
        if torso != "mlp" and len(observation_shape) not in (3, 4):
            raise ValueError(f"torso {torso!r} needs image observations (H, W, stack) or (H, W, channels, stack), "
                             f"got shape {tuple(observation_shape)}; use {type(self).__name__}.torso = 'mlp'")
        self.num_actions = num_actions
        self.lstm_units = lstm_units
        self.observation_shape = tuple(observation_shape)
        self.observation_dtype = observation_dtype
        self._scale = 1.0 / 255.0 if observation_dtype == "uint8" else 1.0
        # Gain sqrt(2) suits ReLU layers; the PPO implementations we compare with use it for tanh MLPs too.
        torso_init = _initializer(initialization, 2 ** 0.5)
        make_torso = lambda: (TORSOS[torso](torso_init, mlp_hidden_sizes, mlp_activation) if torso == "mlp"
                              else TORSOS[torso](torso_init))
        self._torso = make_torso()
        self._value_torso = make_torso() if separate_critic else None
        self._normalizer = (ObservationNormalizer(self.observation_shape, observation_clip)
                            if normalize_observations else None)
        self._core = keras.layers.LSTMCell(lstm_units) if lstm_units else None
        self._head_layers = []

    def _build(self) -> None:
        """Creates every variable now so checkpoints and optimizers see them all."""
        self(tf.zeros([1], tf.int32),
             EnvOutput(tf.zeros([1]), tf.zeros([1], tf.bool), tf.zeros([1, *self.observation_shape],
                                                                      self.observation_dtype)),
             self.initial_state(1))

    @property
    def layers(self):
        return [layer for layer in (self._torso, self._value_torso, self._core, *self._head_layers)
                if layer is not None]

    @property
    def observation_normalizer(self) -> ObservationNormalizer | None:
        """The running observation statistics the agent updates from what it acts on, or None."""
        return self._normalizer

    @property
    def trainable_variables(self):
        # tf.Module does not look inside Keras 3 layers; list them ourselves.
        return [v for layer in self.layers for v in layer.trainable_variables]

    @property
    def variables(self):
        statistics = list(self._normalizer.variables) if self._normalizer else []
        return [v for layer in self.layers for v in layer.variables] + statistics

    @property
    def prev_action_spec(self) -> tf.TensorSpec:
        """The previous actions the policy takes: [B] int32 action indices (continuous networks: [B, A])."""
        return tf.TensorSpec([None], tf.int32)

    @property
    def state_size(self) -> int:
        return 2 * self.lstm_units  # LSTM (h, c) concatenated; 0 without a core.

    def initial_state(self, batch_size) -> tf.Tensor:
        return tf.zeros([batch_size, self.state_size])

    def _torso_outputs(self, observation):
        """The torso's features; with a separate critic, the policy's and the value's concatenated
        (`_split_features` parts them again in the heads)."""
        x = self._normalizer(observation) if self._normalizer else tf.cast(observation, tf.float32) * self._scale
        if len(self.observation_shape) == 4:  # colour or feature planes, stacked: one conv input of C*k channels
            height, width, channels, stack = self.observation_shape
            x = tf.reshape(x, [-1, height, width, channels * stack])
        if self._value_torso is None:
            return self._torso(x)
        return tf.concat([self._torso(x), self._value_torso(x)], axis=-1)

    def _split_features(self, features):
        """(policy features, value features)."""
        if self._value_torso is None:
            return features, features
        return tuple(tf.split(features, 2, axis=-1))

    def _heads(self, features):
        raise NotImplementedError

    def _core_step(self, features, prev_action, env_output, state):
        first = env_output.first[:, None]
        state = tf.where(first, tf.zeros_like(state), state)
        prev_action = tf.where(env_output.first, tf.zeros_like(prev_action), prev_action)
        inputs = tf.concat([features, tf.one_hot(prev_action, self.num_actions),
                            env_output.reward[:, None]], axis=-1)
        h, c = tf.split(state, 2, axis=-1)
        output, (h, c) = self._core(inputs, [h, c])
        return output, tf.concat([h, c], axis=-1)

    def __call__(self, prev_actions, env_outputs: EnvOutput, core_state):
        """One step for a batch: returns (head outputs [B, ...], new core state [B, S])."""
        features = self._torso_outputs(env_outputs.observation)
        if self._core is not None:
            features, core_state = self._core_step(features, prev_actions, env_outputs, core_state)
        return self._heads(features), core_state

    def unroll(self, prev_actions, env_outputs: EnvOutput, core_state):
        """A time-major unroll [T, B, ...] from the core state before its first step;
        returns (head outputs [T, B, ...], core state after the last step)."""
        shape = tf.shape(env_outputs.first)
        num_steps, batch = shape[0], shape[1]
        flat_obs = tf.reshape(env_outputs.observation,
                              tf.concat([[num_steps * batch], tf.shape(env_outputs.observation)[2:]], 0))
        features = self._torso_outputs(flat_obs)
        features = tf.reshape(features, [num_steps, batch, features.shape[-1]])
        if self._core is not None:
            outputs = tf.TensorArray(tf.float32, size=num_steps)
            for t in tf.range(num_steps):
                step_output = EnvOutput(env_outputs.reward[t], env_outputs.first[t], None)
                output, core_state = self._core_step(features[t], prev_actions[t], step_output, core_state)
                outputs = outputs.write(t, output)
            features = outputs.stack()
        # Heads see [T*B, F] like in a single step (Keras models fix their input rank once built).
        heads = self._heads(tf.reshape(features, [num_steps * batch, features.shape[-1]]))
        unflatten = lambda x: tf.reshape(x, tf.concat([[num_steps, batch], tf.shape(x)[1:]], 0))
        return tf.nest.map_structure(unflatten, heads), core_state


@gin.configurable
class ActorCriticNetwork(RecurrentNetwork):
    """V-trace's network: policy logits and a baseline value."""

    def __init__(self, num_actions: int, observation_shape: Sequence[int], observation_dtype: str,
                 torso: str | None = None, lstm_units: int = 0, mlp_hidden_sizes: Sequence[int] = (64, 64),
                 initialization: str = "glorot", separate_critic: bool = False):
        """The network for `num_actions` actions on observations of `observation_shape` and dtype.

        Settings:
            `torso`: 'nature_cnn' (Mnih et al. 2015, the fast choice on CPU), 'impala_resnet' (IMPALA's
                15 convolutions, for a GPU) or 'mlp' (None: 'nature_cnn' for image stacks, 'mlp' otherwise).
            `lstm_units`: units of the LSTM core between torso and heads, fed also the previous action and
                reward (0: no core, a feed-forward network).
            `mlp_hidden_sizes`: widths of the 'mlp' torso's tanh layers ((64, 64)); unused by the others.
            `initialization`: 'glorot' (Keras' default) or 'orthogonal' ('glorot'; 'orthogonal' in
                atari_vtrace.gin). 'orthogonal' draws orthogonal weights (gain sqrt(2) in the torso, 0.01 on
                the policy head, 1 on the baseline), so the first policy is nearly uniform; 'glorot' starts
                a Nature-CNN policy on Pong at about half the maximum entropy.
            `separate_critic`: the baseline gets a torso of its own instead of sharing the policy's (False;
                True in classic_ppo.gin: with a shared torso PPO reached only 86 on CartPole after 150k
                steps, its policy barely moving while the value loss dominated;
                benchmarks/experiments/2026-11-25-ppo-sac-probes.md).
                Feed-forward networks only.
        """
        super().__init__("actor_critic", num_actions, observation_shape, observation_dtype, torso, lstm_units,
                         mlp_hidden_sizes, initialization, separate_critic)
        self._policy = keras.layers.Dense(num_actions, name="policy_logits",
                                          kernel_initializer=_initializer(initialization, 0.01)())
        self._baseline = keras.layers.Dense(1, name="baseline",
                                            kernel_initializer=_initializer(initialization, 1.0)())
        self._head_layers = [self._policy, self._baseline]
        self._build()

    def _heads(self, features) -> AgentOutput:
        policy_features, value_features = self._split_features(features)
        return AgentOutput(self._policy(policy_features), tf.squeeze(self._baseline(value_features), -1),
                           policy_features)


@gin.configurable
class ContinuousActorCriticNetwork(RecurrentNetwork):
    """A Gaussian policy for continuous actions and a value, from MLP torsos (PPO on MuJoCo).

    The policy head's output (`policy_logits`, named as the discrete network's) is the
    distribution's params: the mean [A] and a state-independent log standard deviation [A]
    (learner/distributions.py), so the stored behaviour params give the exact ratio pi/mu."""

    def __init__(self, action_size: int, observation_shape: Sequence[int], observation_dtype: str,
                 mlp_hidden_sizes: Sequence[int] = (64, 64), separate_critic: bool = True,
                 initial_log_std: float = 0.0, normalize_observations: bool = True,
                 observation_clip: float = 10.0, initialization: str = "orthogonal", mlp_activation: str = "tanh"):
        """The network for `action_size`-dimensional actions on observations of `observation_shape`.

        Settings:
            `mlp_hidden_sizes`: widths of each torso's layers ((64, 64), CleanRL's and SEED RL's for MuJoCo).
            `mlp_activation`: the torso layers' activation, 'tanh' or 'relu' ('tanh'; rl-baselines3-zoo's tuned
                HalfCheetah PPO uses 'relu' with (256, 256)).
            `separate_critic`: the value has its own torso instead of sharing the policy's (True: on MuJoCo a
                shared torso lets the value's larger gradient crowd out the policy's).
            `initial_log_std`: the log standard deviation the policy starts with, per action dimension
                (0.0: std 1, on tasks whose bounds are +-1).
            `normalize_observations`: divide each observation element by its running standard deviation
                after subtracting its running mean, over every step any actor sent, clipped to
                +-`observation_clip` (True); the statistics are part of the checkpoint.
            `observation_clip`: the bound of normalised observations (10.0).
            `initialization`: 'orthogonal' (gain sqrt(2) in the torsos, 0.01 on the policy mean, 1 on the value)
                or 'glorot' ('orthogonal').
        """
        super().__init__("continuous_actor_critic", action_size, observation_shape, observation_dtype, "mlp", 0,
                         mlp_hidden_sizes, initialization, separate_critic, normalize_observations, observation_clip,
                         mlp_activation)
        self._mean = keras.layers.Dense(action_size, name="policy_mean",
                                        kernel_initializer=_initializer(initialization, 0.01)())
        self._baseline = keras.layers.Dense(1, name="baseline", kernel_initializer=_initializer(initialization, 1.0)())
        self.log_std = tf.Variable(tf.fill([action_size], float(initial_log_std)), name="log_std")
        self._head_layers = [self._mean, self._baseline]
        self._build()

    @property
    def trainable_variables(self):
        return super().trainable_variables + [self.log_std]

    @property
    def variables(self):
        return super().variables + [self.log_std]

    @property
    def prev_action_spec(self) -> tf.TensorSpec:
        return tf.TensorSpec([None, self.num_actions], tf.float32)

    def _heads(self, features) -> AgentOutput:
        policy_features, value_features = self._split_features(features)
        mean = self._mean(policy_features)
        log_std = tf.broadcast_to(self.log_std, tf.shape(mean))
        return AgentOutput(tf.concat([mean, log_std], axis=-1), tf.squeeze(self._baseline(value_features), -1),
                           policy_features)


@gin.configurable
class DuelingQNetwork(RecurrentNetwork):
    """R2D2's network: Q(x, a) = V(x) + A(x, a) - mean_a A(x, a) (Wang et al. 2016) over an LSTM core."""

    def __init__(self, num_actions: int, observation_shape: Sequence[int], observation_dtype: str,
                 torso: str | None = None, lstm_units: int = 512, head_hidden_units: int = 512,
                 mlp_hidden_sizes: Sequence[int] = (64, 64)):
        """The network for `num_actions` actions on observations of `observation_shape` and dtype.

        Settings:
            `torso`: 'nature_cnn', 'impala_resnet' or 'mlp', as for ActorCriticNetwork (None: 'nature_cnn'
                for image stacks, 'mlp' otherwise).
            `lstm_units`: units of the LSTM core between torso and heads, fed also the previous action and
                reward (512; 0: no core).
            `head_hidden_units`: units of the ReLU layer in each of the value and advantage heads (512).
            `mlp_hidden_sizes`: widths of the 'mlp' torso's tanh layers ((64, 64)); unused by the others.
        """
        super().__init__("dueling_q", num_actions, observation_shape, observation_dtype, torso, lstm_units,
                         mlp_hidden_sizes)
        self._value = keras.Sequential([keras.layers.Dense(head_hidden_units, activation="relu"),
                                        keras.layers.Dense(1)], name="value")
        self._advantage = keras.Sequential([keras.layers.Dense(head_hidden_units, activation="relu"),
                                            keras.layers.Dense(num_actions)], name="advantage")
        self._head_layers = [self._value, self._advantage]
        self._build()

    def _heads(self, features) -> tf.Tensor:
        advantage = self._advantage(features)
        return self._value(features) + advantage - tf.reduce_mean(advantage, axis=-1, keepdims=True)
