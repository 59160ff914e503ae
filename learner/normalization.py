"""Running statistics the learner keeps over every actor's data: observation normalisation and
reward scaling (PPO on MuJoCo needs both). They live on the learner, the one place that sees
every actor's steps, as TensorFlow variables so that checkpoints hold them."""
import numpy as np
import tensorflow as tf


class RunningMeanVariance(tf.Module):
    """Mean and variance of every element of `shape` over all batches merged so far. The merge is
    Chan et al.'s parallel update, exact for any batch sizes: merging batches one by one gives the
    statistics of their concatenation."""

    def __init__(self, shape=(), name: str = "running_mean_variance"):
        super().__init__(name=name)
        self.count = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="count")
        self.mean = tf.Variable(tf.zeros(shape, tf.float64), trainable=False, name="mean")
        self.variance = tf.Variable(tf.ones(shape, tf.float64), trainable=False, name="variance")

    def update(self, batch: np.ndarray) -> None:
        """Merges `batch` [N, *shape] in (numpy, on the calling thread)."""
        batch = np.asarray(batch, np.float64)
        n = batch.shape[0]
        if n == 0:
            return
        count, mean, variance = self.count.numpy(), self.mean.numpy(), self.variance.numpy()
        batch_mean, batch_variance = batch.mean(0), batch.var(0)
        total = count + n
        delta = batch_mean - mean
        # The start's variance of 1 has weight count = 0, so the first batch sets the statistics exactly.
        self.variance.assign((variance * count + batch_variance * n + np.square(delta) * count * n / total) / total)
        self.mean.assign(mean + delta * n / total)
        self.count.assign(total)


class ObservationNormalizer(RunningMeanVariance):
    """(x - mean) / std per element, clipped to +-`clip`. A network holds it, so `seed-eval` plays
    with the statistics the policy learned under. The inference thread merges each batch in;
    training reads the same variables, so an update normalises with statistics a few batches newer
    than acting used, a drift far below the batch-to-batch noise."""

    def __init__(self, shape, clip: float = 10.0, epsilon: float = 1e-8):
        super().__init__(shape, name="observation_normalizer")
        self.clip, self.epsilon = clip, epsilon

    def __call__(self, observations):
        mean = tf.cast(self.mean, tf.float32)
        std = tf.cast(tf.sqrt(self.variance + self.epsilon), tf.float32)
        return tf.clip_by_value((tf.cast(observations, tf.float32) - mean) / std, -self.clip, self.clip)


class RewardScaler(RunningMeanVariance):
    """Divides rewards by the running standard deviation of each env's discounted return (the
    scaling of CleanRL's and Stable-Baselines' PPO on MuJoCo): value targets keep a scale near 1
    whatever the task's reward scale. Keeps one discounted return per env slot. The scaled reward is
    clipped to +-`clip`, as theirs is: the first steps' returns can agree to the last digit (every env
    scoring the same first reward), and their deviation of about 0 would otherwise scale that reward
    by 1/sqrt(epsilon)."""

    def __init__(self, max_slots: int, discount: float, epsilon: float = 1e-8, clip: float = 10.0):
        super().__init__((), name="reward_scaler")
        self.discount, self.epsilon, self.clip = discount, epsilon, clip
        self._returns = np.zeros(max_slots, np.float64)

    def __call__(self, slot_ids: np.ndarray, rewards: np.ndarray, first: np.ndarray) -> np.ndarray:
        """The scaled rewards of one step of these slots (a first step starts its slot's return afresh)."""
        returns = self._returns[slot_ids] * self.discount * ~first + rewards
        self._returns[slot_ids] = returns
        self.update(returns)
        scaled = rewards / np.sqrt(self.variance.numpy() + self.epsilon)
        return np.clip(scaled, -self.clip, self.clip).astype(np.float32)

    def reset(self, slot_ids: np.ndarray) -> None:
        self._returns[slot_ids] = 0.0
