"""Action distributions against numpy's formulas and against sampling."""
import math

import numpy as np
import pytest
import tensorflow as tf

from learner.distributions import Categorical, Gaussian, TanhGaussian, for_action_spec
from seed.specs import ActionSpec

RNG = np.random.default_rng(0)
MEAN = RNG.normal(size=(5, 3)).astype(np.float32)
LOG_STD = RNG.normal(scale=0.5, size=(5, 3)).astype(np.float32)
PARAMS = np.concatenate([MEAN, LOG_STD], -1)
LOW, HIGH = np.array([-1, -2, 0], np.float32), np.array([1, 2, 3], np.float32)


def numpy_gaussian_log_prob(u):
    std = np.exp(LOG_STD)
    return np.sum(-0.5 * ((u - MEAN) / std) ** 2 - LOG_STD - 0.5 * math.log(2 * math.pi), -1)


def test_gaussian_log_prob_and_entropy_match_the_formulas():
    u = RNG.normal(size=(5, 3)).astype(np.float32)
    g = Gaussian(LOW, HIGH)
    np.testing.assert_allclose(g.log_prob(PARAMS, u).numpy(), numpy_gaussian_log_prob(u), rtol=1e-5)
    np.testing.assert_allclose(g.entropy(PARAMS).numpy(),
                               np.sum(0.5 + 0.5 * math.log(2 * math.pi) + LOG_STD, -1), rtol=1e-5)
    np.testing.assert_array_equal(g.env_action(tf.constant([[5.0, -5.0, 1.0]])).numpy(), [[1.0, -2.0, 1.0]])


def test_tanh_gaussian_log_prob_is_the_density_of_the_scaled_squashed_action():
    u = RNG.normal(size=(5, 3)).astype(np.float32)
    t = TanhGaussian(LOW, HIGH)
    scale = (HIGH - LOW) / 2
    # a = low + (tanh(u) + 1) scale: log p(a) = log N(u) - sum log(scale (1 - tanh(u)^2))
    expected = numpy_gaussian_log_prob(u) - np.sum(np.log(scale * (1 - np.tanh(u) ** 2)), -1)
    np.testing.assert_allclose(t.log_prob(PARAMS, u).numpy(), expected, rtol=1e-4)
    a = t.env_action(tf.constant(u)).numpy()
    assert ((a >= LOW) & (a <= HIGH)).all()
    np.testing.assert_allclose(a, LOW + (np.tanh(u) + 1) * scale, rtol=1e-5)


def test_tanh_gaussian_log_prob_stays_finite_where_tanh_saturates():
    t = TanhGaussian(LOW, HIGH)
    assert np.isfinite(t.log_prob(PARAMS, np.full((5, 3), 30.0, np.float32)).numpy()).all()


def test_tanh_gaussian_entropy_estimate_averages_to_the_sampled_entropy():
    t = TanhGaussian(LOW, HIGH)
    params = np.tile(PARAMS[:1], (20000, 1))
    samples = t.sample(params)
    monte_carlo = -np.mean(t.log_prob(params, samples).numpy())
    assert abs(np.mean(t.entropy(params).numpy()) - monte_carlo) < 0.05


def test_categorical_matches_softmax():
    logits = RNG.normal(size=(4, 6)).astype(np.float32)
    actions = np.array([0, 5, 2, 3], np.int32)
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    c = Categorical(6)
    np.testing.assert_allclose(c.log_prob(logits, actions).numpy(), np.log(p[np.arange(4), actions]), rtol=1e-5)
    np.testing.assert_allclose(c.entropy(logits).numpy(), -np.sum(p * np.log(p), -1), rtol=1e-5)
    np.testing.assert_array_equal(c.mode(logits).numpy(), np.argmax(logits, -1))


def test_gaussian_samples_have_the_params_moments():
    g = Gaussian(LOW, HIGH)
    samples = g.sample(np.tile(PARAMS[:1], (20000, 1))).numpy()
    np.testing.assert_allclose(samples.mean(0), MEAN[0], atol=0.05)
    np.testing.assert_allclose(samples.std(0), np.exp(LOG_STD[0]), rtol=0.05)


def test_the_distribution_follows_the_action_spec_and_refuses_unbounded_actions():
    assert isinstance(for_action_spec(ActionSpec.discrete(3)), Categorical)
    assert type(for_action_spec(ActionSpec.continuous([-1.0], [1.0]))) is Gaussian
    assert type(for_action_spec(ActionSpec.continuous([-1.0], [1.0]), squash=True)) is TanhGaussian
    with pytest.raises(ValueError, match="unbounded"):
        for_action_spec(ActionSpec.continuous([-np.inf], [np.inf]))
