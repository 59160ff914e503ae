import numpy as np
import pytest

from seed import envs


def test_atari_preprocessing_gives_single_84x84_grayscale_frames():
    e = envs.create_atari_envs(2, game="Pong")
    try:
        assert e.spec.observation_shape == (84, 84) and e.spec.observation_dtype == "uint8"
        assert e.spec.num_actions == 6 and e.spec.frames_per_step == 4
        obs = e.reset(seed=3)
        assert obs.shape == (2, 84, 84) and obs.dtype == np.uint8
        obs, rewards, terminated, truncated = e.step(np.array([0, 1]))
        assert obs.shape == (2, 84, 84) and rewards.dtype == np.float32
    finally:
        e.close()


def test_full_action_space_option():
    e = envs.create_atari_envs(1, game="Pong", full_action_space=True)
    assert e.spec.num_actions == 18
    e.close()


def test_frame_limit_is_truncation_then_next_step_autoreset():
    e = envs.create_atari_envs(1, game="Pong", max_episode_frames=200, noop_max=0)
    e.reset(seed=0)
    for step in range(1, 100):  # noqa: B007 (read below)
        _, reward, terminated, truncated = e.step(np.zeros(1, np.int64))
        if truncated[0]:
            break
    assert truncated[0] and not terminated[0] and step == 50  # 200 frames / frame skip 4
    _, reward, terminated, truncated = e.step(np.zeros(1, np.int64))
    assert reward[0] == 0 and not terminated[0] and not truncated[0]  # the reset step
    e.close()


def test_one_frame_per_step_is_the_current_frame_not_a_frozen_one():
    """SEED RL's Atari preprocessing with num_action_repeats=1 max-pooled every frame with a buffer
    it never refreshed, the episode's first frame. Here frame_skip=1 gives the current frame."""
    def play(max_pool: bool) -> np.ndarray:
        e = envs.create_atari_envs(1, game="Pong", frame_skip=1, max_pool=max_pool, noop_max=0)
        try:
            assert e.spec.frames_per_step == 1
            frames = [e.reset(seed=3)[0]]
            rng = np.random.default_rng(0)
            for _ in range(200):
                frames.append(e.step(rng.integers(0, e.spec.num_actions, 1))[0][0])
            return np.stack(frames)
        finally:
            e.close()

    pooled, unpooled = play(max_pool=True), play(max_pool=False)
    np.testing.assert_array_equal(pooled, unpooled)
    # Pooled with a frozen first frame, every pixel would stay at least as bright as it began.
    assert any((frame < pooled[0]).any() for frame in pooled[1:])
    assert sum((pooled[t] != pooled[t - 1]).any() for t in range(1, len(pooled))) > 100


def test_rewards_are_unclipped():
    e = envs.create_atari_envs(2, game="SpaceInvaders")
    e.reset(seed=1)
    rng = np.random.default_rng(0)
    best = 0.0
    for _ in range(300):
        _, rewards, _, _ = e.step(rng.integers(0, e.spec.num_actions, 2))
        best = max(best, float(rewards.max()))
    e.close()
    assert best >= 5.0  # Space Invaders pays 5-30 per alien; ale-py's clipping would give 1


def test_unknown_game_names_the_fix():
    with pytest.raises(ValueError, match=r"unknown Atari game 'Pongg' \(did you mean 'Pong'\?\).*like 'Pong'"):
        envs.create_atari_envs(1, game="Pongg")
    with pytest.raises(ValueError, match=r"\(did you mean 'SpaceInvaders'\?\)"):
        envs.create_atari_envs(1, game="Spaceinvader")


def test_an_unknown_name_is_given_the_closest_known_one_only_when_it_is_close():
    assert str(envs.unknown_name("game", "walker-wlak", ["walker-walk", "walker-run"])) == (
        "unknown game 'walker-wlak' (did you mean 'walker-walk'?); use one of walker-walk, walker-run")
    assert str(envs.unknown_name("scenario", "academy_3v1", ["academy_corner"], how="pick")) == (
        "unknown scenario 'academy_3v1'; pick academy_corner")


@pytest.mark.parametrize("setting, message", [
    ({"frame_size": 0}, "create_atari_envs.frame_size must be positive, got 0"),  # ale-py hung
    ({"frame_skip": 0}, "create_atari_envs.frame_skip must be positive, got 0"),
    ({"repeat_action_probability": 1.5}, "create_atari_envs.repeat_action_probability must be between 0 and 1"),
    ({"noop_max": -1}, "create_atari_envs.noop_max must be 0 or more, got -1")])
def test_out_of_range_atari_settings_are_refused_before_ale_py_sees_them(setting, message):
    with pytest.raises(ValueError, match=message):
        envs.create_atari_envs(1, **setting)


def test_game_names_map_to_rom_ids():
    assert envs.ale_rom_id("SpaceInvaders") == "space_invaders"
    assert envs.ale_rom_id("Breakout") == "breakout"


def test_cartpole_spec():
    e = envs.create_gym_envs(3, env_id="CartPole-v1")
    assert e.spec.observation_shape == (4,) and e.spec.observation_dtype == "float32"
    assert e.spec.num_actions == 2 and e.reset(seed=0).shape == (3, 4)
    e.close()


def test_every_family_config_names_its_game_in_the_game_macro_and_the_family_reads_it():
    import gin

    from seed import gin_setup
    try:
        # Pong has 6 actions, CartPole 2; cheetah-run 17 observations.
        for config, default, other, spec in (("atari_vtrace.gin", "Pong", "Breakout", (4, (84, 84))),
                                             ("classic_r2d2.gin", "CartPole-v1", "Acrobot-v1", (3, (6,))),
                                             ("dmc_sac.gin", "cheetah-run", "walker-walk", (0, (24,)))):
            gin.clear_config()
            gin_setup.parse([config], [], skip_unknown=True)
            assert gin.query_parameter("%GAME") == default
            gin.clear_config()
            gin_setup.parse([config], [f"GAME='{other}'"], skip_unknown=True)
            other_spec = envs.env_spec()
            assert (other_spec.num_actions, other_spec.observation_shape) == spec, config
    finally:
        gin.clear_config()


def test_a_gymnasium_env_with_box_actions_gets_a_continuous_action_spec_and_steps_float_actions():
    e = envs.create_gym_envs(2, env_id="Pendulum-v1")
    try:
        assert not e.spec.action.is_discrete and e.spec.num_actions == 0
        assert e.spec.action.shape == (1,) and e.spec.action.low == (-2.0,) and e.spec.action.high == (2.0,)
        assert "continuous 1 actions in [-2, 2]" in e.spec.describe()
        e.reset(seed=0)
        obs, rewards, _, _ = e.step(np.array([[2.0], [-2.0]], np.float32))
        assert obs.shape == (2, 3) and rewards.shape == (2,) and (rewards <= 0).all()
    finally:
        e.close()


def test_a_mujoco_task_steps_with_float32_observations_and_its_bounds():
    e = envs.create_mujoco_envs(2, task="Hopper-v5")
    try:
        assert e.spec.observation_shape == (11,) and e.spec.observation_dtype == "float32"
        assert e.spec.action.shape == (3,) and e.spec.action.low == (-1.0,) * 3 and e.spec.action.high == (1.0,) * 3
        first = e.reset(seed=0)
        obs, rewards, terminated, truncated = e.step(np.zeros((2, 3), np.float32))
        assert first.dtype == obs.dtype == np.float32 and obs.shape == (2, 11)
        assert np.isfinite(rewards).all() and not terminated.any() and not truncated.any()
    finally:
        e.close()


def test_an_unknown_mujoco_task_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown MuJoCo task 'Cheetah'; use one of HalfCheetah-v5"):
        envs.create_mujoco_envs(1, task="Cheetah")


def test_breakout_lost_lives_end_learning_episodes_while_the_game_and_its_five_lives_go_on():
    """A random player: each lost life is code 2 followed by a reset step that serves the ball (FIRE);
    the fifth ends the game (code 1), and only then does the emulator restart."""
    from seed.specs import TERMINATED_LIFE_LOST
    e = envs.create_atari_envs(2, game="Breakout", terminal_on_life_loss=True, fire_reset=True, noop_max=0)
    e.reset(seed=0)
    rng = np.random.default_rng(0)
    codes_seen = [[], []]
    for _ in range(3000):
        _, _, terminated, truncated = e.step(rng.integers(0, e.spec.num_actions, 2))
        assert not truncated.any()
        for i in range(2):
            if terminated[i]:
                codes_seen[i].append(int(terminated[i]))
        if all(1 in c for c in codes_seen):
            break
    for codes in codes_seen:
        first_game = codes[:codes.index(1) + 1]
        assert first_game == [TERMINATED_LIFE_LOST] * 4 + [1]
    e.close()


def test_without_lives_a_life_loss_setting_changes_nothing():
    """Pong has no lives: the same seed and actions give the same steps with the setting on or off."""
    played = []
    for on in (False, True):
        e = envs.create_atari_envs(2, game="Pong", terminal_on_life_loss=on, max_episode_frames=800)
        rng = np.random.default_rng(0)
        steps = [(e.reset(seed=0),)] + [e.step(rng.integers(0, e.spec.num_actions, 2)) for _ in range(300)]
        played.append(steps)
        e.close()
    for off_step, on_step in zip(*played):
        for off, on in zip(off_step, on_step):
            np.testing.assert_array_equal(off, on)
    assert any(step[3].any() for step in played[1][1:])  # the frame limit's cut-offs came and went alike


def test_a_life_lost_on_the_frame_limit_step_is_a_cut_off_game_not_a_lost_life():
    """Seaquest, seed 0, no no-ops: NOOPs lose the first life at frame 272, which is also the limit.
    The game restarts, so the step must say truncated (and not 'life lost, play on')."""
    e = envs.create_atari_envs(1, game="Seaquest", terminal_on_life_loss=True, max_episode_frames=272,
                               noop_max=0)
    e.reset(seed=0)
    for step in range(1, 100):  # noqa: B007 (read below)
        _, _, terminated, truncated = e.step(np.zeros(1, np.int64))
        if terminated[0] or truncated[0]:
            break
    assert step == 68 and truncated[0] and terminated[0] == 0
    e.close()


def test_a_dm_control_task_flattens_its_observations_and_keeps_its_bounds():
    e = envs.create_dmc_envs(2, task="cheetah-run")
    try:
        assert e.spec.observation_shape == (17,) and e.spec.observation_dtype == "float32"  # position 8 + velocity 9
        assert e.spec.action.shape == (6,) and e.spec.action.low == (-1.0,) * 6 and e.spec.action.high == (1.0,) * 6
        assert e.spec.frames_per_step == 1
        first = e.reset(seed=0)
        obs, rewards, terminated, truncated = e.step(np.ones((2, 6), np.float32))
        assert first.dtype == obs.dtype == np.float32 and obs.shape == (2, 17) and not (obs == first).all()
        assert rewards.dtype == np.float32 and ((rewards >= 0) & (rewards <= 1)).all()
        assert not terminated.any() and not truncated.any()
    finally:
        e.close()


def test_a_dm_control_time_limit_is_a_truncation_counted_in_control_steps_under_an_action_repeat():
    e = envs.create_dmc_envs(1, task="walker-walk", action_repeat=8)
    try:
        assert e.spec.frames_per_step == 8
        e.reset(seed=1)
        rewards = []
        for _ in range(200):
            _, reward, terminated, truncated = e.step(np.zeros((1, 6), np.float32))
            rewards.append(reward[0])
            assert not terminated[0]
            if truncated[0]:
                break
        assert truncated[0] and len(rewards) == 1000 // 8  # the suite's 1,000 control steps
        assert max(rewards) > 1.0  # a step's reward sums its 8 control steps' (each at most 1)
        _, reward, terminated, truncated = e.step(np.zeros((1, 6), np.float32))
        assert reward[0] == 0 and not terminated[0] and not truncated[0]  # the reset step
    finally:
        e.close()


def test_dm_control_resets_are_seeded():
    def first_observations(seed):
        e = envs.create_dmc_envs(2, task="walker-walk")
        try:
            return e.reset(seed=seed)
        finally:
            e.close()

    a, b = first_observations(5), first_observations(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[0], a[1])  # env i resets with seed + i
    assert not np.array_equal(a, first_observations(6))


def test_unknown_dm_control_tasks_and_action_repeats_are_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"unknown dm_control task 'cheetah_run' \(did you mean 'cheetah-run'\?\); "
                                         "use DOMAIN-TASK, one of .*cheetah-run"):
        envs.create_dmc_envs(1, task="cheetah_run")
    with pytest.raises(ValueError, match="action_repeat=0; it must be at least 1"):
        envs.create_dmc_envs(1, action_repeat=0)
