"""The football family on envpool's real Google Research Football engine, and its checkpoint reward."""
import numpy as np
import pytest

from seed import envs
from seed.envs.football import ACTIVE, BALL, CheckpointReward

RIGHT = 5  # gfootball's default action set: idle, left, top_left, top, top_right, right, ...


def test_seed_rls_observation_and_actions():
    with envs.create_football_envs(2, scenario="academy_empty_goal_close") as e:
        assert e.spec.observation_shape == (72, 96, 4) and e.spec.observation_dtype == "uint8"
        assert e.spec.num_actions == 19 and e.spec.frames_per_step == 1
        first = e.reset(seed=0)
        assert first.shape == (2, 72, 96, 4) and first.dtype == np.uint8
        assert (first[..., BALL] == 255).sum() == 2  # one ball on each env's mini-map


def test_running_right_scores_into_the_empty_goal_ends_the_episode_and_the_next_step_resets():
    with envs.create_football_envs(1, scenario="academy_empty_goal_close") as e:
        e.reset(seed=0)
        rewards = []
        for _ in range(200):
            _, reward, terminated, truncated = e.step(np.array([RIGHT]))
            rewards.append(reward[0])
            if terminated[0] or truncated[0]:
                break
        assert terminated[0] and rewards[-1] == 1.0 and sum(rewards[:-1]) == 0  # scoring: goals only
        _, reward, terminated, _ = e.step(np.array([RIGHT]))
        assert reward[0] == 0 and not terminated[0]  # the reset step


def test_the_checkpoint_reward_pays_one_in_all_by_the_goal_and_nothing_twice():
    with envs.create_football_envs(1, scenario="academy_empty_goal_close", rewards="scoring,checkpoints") as e:
        e.reset(seed=0)
        episodes, total = [], 0.0
        for _ in range(400):
            _, reward, terminated, truncated = e.step(np.array([RIGHT]))
            total += reward[0]
            if terminated[0] or truncated[0]:
                episodes.append(total)
                total = 0.0
                e.step(np.array([RIGHT]))  # the reset step
                if len(episodes) == 2:
                    break
        assert episodes == pytest.approx([2.0, 2.0])  # ten checkpoints of 0.1, then the goal's 1


def test_a_pool_reset_starts_every_env_s_checkpoints_afresh(tmp_path):
    with envs.create_football_envs(1, scenario="academy_empty_goal_close", rewards="scoring,checkpoints") as e:
        e.reset(seed=0)
        collected = sum(e.step(np.array([RIGHT]))[1][0] for _ in range(3))
        assert 0 < collected < 1  # some checkpoints, no goal yet
        e.reset(seed=1)  # as an actor does on reconnecting: new episodes
        total = 0.0
        for _ in range(200):
            _, reward, terminated, truncated = e.step(np.array([RIGHT]))
            total += reward[0]
            if terminated[0] or truncated[0]:
                break
        assert total == pytest.approx(2.0)  # all ten checkpoints again, then the goal


def smm(ball, active):
    frame = np.zeros((72, 96, 4), np.uint8)
    frame[ball[0], ball[1], BALL] = 255
    frame[active[0], active[1], ACTIVE] = 255
    return frame


def test_checkpoints_by_hand_computed_distances_to_the_goal():
    reward = CheckpointReward(1)
    no = np.zeros(1, bool)
    # The ball at the centre spot (x = 0, y = 0): distance 1 to the goal, beyond the first checkpoint (0.99).
    centre = smm((35, 47), (35, 47))[None]
    assert reward(centre, np.zeros(1, np.float32), np.array([0]), no)[0] == pytest.approx(0.0, abs=0.02)
    # x = (72 + 0.5) / 96 * 2 - 1 = 0.5104, y ~ 0: distance 0.4896 is within the thresholds 0.99 - 0.0889 n
    # for n = 0 ... 5 (0.546), not n = 6 (0.457): six checkpoints.
    near = smm((35, 72), (35, 73))[None]
    assert reward(near, np.zeros(1, np.float32), np.array([0]), no)[0] == pytest.approx(0.6)
    assert reward(near, np.zeros(1, np.float32), np.array([0]), no)[0] == 0  # collected once per episode
    # The other team holds the ball: nothing; a goal: the four checkpoints left, then the goal's 1.
    closer = smm((35, 90), (35, 90))[None]
    assert reward(closer, np.zeros(1, np.float32), np.array([1]), no)[0] == 0
    assert reward(closer, np.ones(1, np.float32), np.array([0]), no)[0] == pytest.approx(1.4)
    # A new episode starts counting again; a ball away from the controlled player collects nothing.
    assert reward(near, np.zeros(1, np.float32), np.array([0]), np.ones(1, bool))[0] == 0
    assert reward(smm((35, 72), (10, 10))[None], np.zeros(1, np.float32), np.array([0]), no)[0] == 0


def test_pools_are_seeded():
    def first(seed):
        with envs.create_football_envs(2, scenario="11_vs_11_easy_stochastic") as e:
            e.reset(seed=seed)
            return np.stack([e.step(np.zeros(2, np.int64))[0] for _ in range(30)])
    np.testing.assert_array_equal(first(3), first(3))


def test_unknown_scenarios_and_rewards_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="unknown football scenario 'empty_goal'; use one of 11_vs_11_easy"):
        envs.create_football_envs(1, scenario="empty_goal")
    with pytest.raises(ValueError, match=r"'academy_3_vs_1_keeper' \(did you mean 'academy_3_vs_1_with_keeper'\?\)"):
        envs.create_football_envs(1, scenario="academy_3_vs_1_keeper")
    with pytest.raises(ValueError, match="use 'scoring' or 'scoring,checkpoints'"):
        envs.create_football_envs(1, rewards="checkpoints")
