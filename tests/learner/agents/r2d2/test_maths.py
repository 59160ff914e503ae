"""R2D2's maths against plain numpy."""
import numpy as np
import pytest

from learner.agents.r2d2 import maths as r2d2


def test_h_and_h_inv_are_inverses_over_a_wide_range():
    x = np.concatenate([-np.logspace(-6, 5, 500), [0.0], np.logspace(-6, 5, 500)]).astype(np.float64)
    np.testing.assert_allclose(r2d2.h_inv(r2d2.h(x)).numpy(), x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r2d2.h(r2d2.h_inv(x)).numpy(), x, rtol=1e-5, atol=1e-5)


def test_h_matches_its_definition():
    x = np.array([-100.0, -1.0, 0.0, 3.0, 1e4])
    want = np.sign(x) * (np.sqrt(np.abs(x) + 1) - 1) + 1e-3 * x
    np.testing.assert_allclose(r2d2.h(x).numpy(), want, rtol=1e-6)


def reference_targets(rewards, terminated, truncated, boot, gamma, n, eps=1e-3):
    """Loops over the window of each transition, as the R2D2 paper describes it."""
    h = lambda x: np.sign(x) * (np.sqrt(np.abs(x) + 1) - 1) + eps * x
    h_inv = lambda x: np.sign(x) * (((np.sqrt(1 + 4 * eps * (np.abs(x) + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1)
    steps, batch = rewards.shape
    last = steps - 1
    out = np.zeros((steps - 1, batch))
    for b in range(batch):
        for t in range(steps - 1):
            total = 0.0
            for k in range(1, n + 1):
                i = t + k
                total += gamma ** (k - 1) * rewards[i, b]
                if terminated[i, b]:
                    break
                if truncated[i, b] or k == n or i == last:
                    total += gamma ** k * h_inv(boot[i, b])
                    break
            out[t, b] = h(total)
    return out


@pytest.mark.parametrize("n", [1, 3, 5])
def test_n_step_targets_match_reference_with_episode_ends_and_truncation(n):
    rng = np.random.default_rng(n)
    steps, batch = 12, 5
    rewards = rng.normal(0, 2, (steps, batch)).astype(np.float32)
    terminated = rng.random((steps, batch)) < 0.1
    truncated = (rng.random((steps, batch)) < 0.1) & ~terminated
    boot = rng.normal(0, 3, (steps, batch)).astype(np.float32)
    assert terminated.any() and truncated.any()
    got = r2d2.n_step_targets(rewards, terminated, truncated, boot, 0.97, n).numpy()
    want = reference_targets(rewards, terminated, truncated, boot, 0.97, n)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_terminal_window_has_no_bootstrap_and_truncated_window_bootstraps_from_final_observation():
    rewards = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 0.0], [5.0, 5.0]], np.float32)
    terminated = np.array([[0, 0], [0, 0], [1, 0], [0, 0], [0, 0]], bool)
    truncated = np.array([[0, 0], [0, 0], [0, 1], [0, 0], [0, 0]], bool)
    boot = np.array(r2d2.h(np.full((5, 2), 10.0)))
    got = r2d2.h_inv(r2d2.n_step_targets(rewards, terminated, truncated, boot, 0.5, 5)).numpy()
    assert got[0, 0] == pytest.approx(1.0 + 0.5 * 2.0, rel=1e-4)
    assert got[0, 1] == pytest.approx(1.0 + 0.5 * 2.0 + 0.25 * 10.0, rel=1e-4)
