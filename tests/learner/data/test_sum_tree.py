import numpy as np
import pytest

from learner.data.sum_tree import SumTree


def test_sampling_frequencies_match_priorities():
    rng = np.random.default_rng(1234)
    priorities = rng.random(37) * (rng.random(37) < 0.8)  # some zero
    tree = SumTree(37)
    tree.set(np.arange(37), priorities)
    assert tree.total == pytest.approx(priorities.sum())
    draws = 200_000
    counts = np.bincount(np.concatenate([tree.sample(1000, rng) for _ in range(draws // 1000)]), minlength=37)
    expected = priorities / priorities.sum() * draws
    assert counts[priorities == 0].sum() == 0
    nonzero = expected > 0
    chi2 = ((counts[nonzero] - expected[nonzero]) ** 2 / expected[nonzero]).sum()
    # 99.9th percentile of chi-squared with (nonzero - 1) degrees of freedom is below 2.5 x dof here.
    assert chi2 < 2.5 * (nonzero.sum() - 1), chi2


def test_update_changes_what_is_sampled():
    rng = np.random.default_rng(0)
    tree = SumTree(8)
    tree.set(np.arange(8), np.ones(8))
    tree.set(np.array([3]), np.array([0.0]))
    tree.set(np.array([5, 6]), np.array([100.0, 0.0]))
    samples = tree.sample(2000, rng)
    assert 3 not in samples and 6 not in samples
    assert (samples == 5).mean() > 0.9
    np.testing.assert_array_equal(tree.get(np.array([5, 6])), [100.0, 0.0])


@pytest.mark.parametrize("operation", ["set", "sample"])
def test_cost_grows_logarithmically_in_capacity(operation):
    rng = np.random.default_rng(0)
    visits = []
    for capacity in (2 ** 8, 2 ** 16):
        tree = SumTree(capacity)
        tree.set(np.arange(capacity), np.ones(capacity))
        tree.node_visits = 0
        if operation == "set":
            tree.set(np.array([7]), np.array([2.0]))
        else:
            tree.sample(1, rng)
        visits.append(tree.node_visits)
    # 256 times more items cost twice the node visits (depth 8 -> 16), not 256 times.
    assert visits[1] <= 2.2 * visits[0]
