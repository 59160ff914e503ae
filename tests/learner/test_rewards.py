import pytest

from learner.rewards import clip_rewards


def test_reward_clipping_modes():
    rewards = [-10.0, -0.5, 0.0, 0.5, 10.0]
    assert clip_rewards(rewards, "none").tolist() == rewards
    assert clip_rewards(rewards, "abs_one").tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    soft = clip_rewards(rewards, "soft_asymmetric")
    assert (soft[4] == pytest.approx(5 * 0.9640276, rel=1e-5)
            and soft[0] == pytest.approx(-0.3 * 5 * 0.9640276, rel=1e-5))
    with pytest.raises(ValueError, match="unknown reward_clipping"):
        clip_rewards(rewards, "tanh")
