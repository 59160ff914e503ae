"""Running statistics on the learner: merged batches equal the whole data's statistics, and a
checkpoint round trip keeps them."""
import numpy as np
import tensorflow as tf

from learner.normalization import ObservationNormalizer, RewardScaler, RunningMeanVariance


def test_statistics_merged_across_batches_of_any_size_equal_those_of_all_the_data():
    rng = np.random.default_rng(0)
    data = rng.normal(loc=[3.0, -1.0], scale=[2.0, 0.1], size=(1000, 2))
    stats = RunningMeanVariance((2,))
    start = 0
    for size in (1, 7, 300, 2, 690):
        stats.update(data[start:start + size])
        start += size
    assert int(stats.count.numpy()) == 1000
    np.testing.assert_allclose(stats.mean.numpy(), data.mean(0), rtol=1e-12)
    np.testing.assert_allclose(stats.variance.numpy(), data.var(0), rtol=1e-10)


def test_observations_are_standardised_and_clipped():
    normalizer = ObservationNormalizer((2,), clip=3.0)
    normalizer.update(np.array([[0.0, 10.0], [2.0, 30.0]]))
    out = normalizer(np.array([[1.0, 20.0], [101.0, 20.0]], np.float32)).numpy()
    np.testing.assert_allclose(out, [[0.0, 0.0], [3.0, 0.0]], atol=1e-6)  # mean 1, std 1; 100 std clipped


def test_statistics_survive_a_checkpoint_round_trip(tmp_path):
    normalizer = ObservationNormalizer((3,))
    normalizer.update(np.random.default_rng(1).normal(size=(50, 3)))
    tf.train.Checkpoint(n=normalizer).write(str(tmp_path / "ckpt"))
    fresh = ObservationNormalizer((3,))
    tf.train.Checkpoint(n=fresh).read(str(tmp_path / "ckpt")).assert_consumed()
    for a, b in zip((normalizer.count, normalizer.mean, normalizer.variance),
                    (fresh.count, fresh.mean, fresh.variance)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_rewards_are_divided_by_the_standard_deviation_of_each_slots_discounted_return():
    scaler = RewardScaler(max_slots=2, discount=0.5)
    first = np.array([True, True])
    out1 = scaler(np.array([0, 1]), np.array([1.0, 3.0], np.float32), first)
    returns = np.array([1.0, 3.0])
    np.testing.assert_allclose(out1, [1.0, 3.0] / np.sqrt(returns.var() + 1e-8), rtol=1e-6)
    out2 = scaler(np.array([0, 1]), np.array([1.0, 1.0], np.float32), ~first)
    returns = np.concatenate([returns, [1.0 * 0.5 + 1.0, 3.0 * 0.5 + 1.0]])
    np.testing.assert_allclose(out2, [1.0, 1.0] / np.sqrt(returns.var() + 1e-8), rtol=1e-6)


def test_a_scaled_reward_is_clipped_where_the_returns_deviation_is_about_zero():
    scaler = RewardScaler(max_slots=2, discount=0.9)
    same = scaler(np.array([0, 1]), np.array([2.0, 2.0], np.float32), np.array([True, True]))
    np.testing.assert_array_equal(same, [10.0, 10.0])  # 2 / sqrt(0 + 1e-8) without the clip
    assert RewardScaler(max_slots=1, discount=0.9, clip=3.0)(
        np.array([0]), np.array([-5.0], np.float32), np.array([True]))[0] == -3.0
