import pathlib
import subprocess
import sys

import gin
import pytest

from seed import gin_setup
from tests.processes import REPO_ROOT


def run_role(role, *args):
    return subprocess.run([sys.executable, "-c", f"import sys; from {role}.main import main; sys.exit(main())",
                           *args], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)


@pytest.mark.parametrize("role", ["actors", "learner"])
def test_unknown_binding_fails_at_start_in_one_line_with_the_nearest_name(role, tmp_path):
    result = run_role(role, "--gin_config", "classic_vtrace.gin", "--logdir", str(tmp_path),
                      "--gin_bindings", "create_gym_envs.env_idd='CartPole-v1'")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].startswith(
        "error: bad gin binding \"create_gym_envs.env_idd='CartPole-v1'\": "), result.stderr
    assert "did you mean 'env_id'?" in result.stderr


def test_a_misspelt_configurable_name_stops_the_learner_and_the_actor_skips_only_what_it_does_not_register(tmp_path):
    binding = "create_gym_env.env_id='CartPole-v1'"  # create_gym_envs, misspelt
    result = run_role("learner", "--gin_config", "classic_vtrace.gin", "--logdir", str(tmp_path), "--gin_bindings",
                      binding)
    assert result.returncode != 0
    assert "did you mean 'create_gym_envs'?" in result.stderr.strip().splitlines()[-1], result.stderr
    import actors.actor  # noqa: F401  the actor's configurables, without the learner's
    try:
        gin_setup.parse(["classic_vtrace.gin"], ["VTraceLoss.entropy_cost=0.5"], skip_unknown=True)
        with pytest.raises(SystemExit, match="did you mean 'num_envs'"):
            gin.clear_config()
            gin_setup.parse(["classic_vtrace.gin"], ["run_actor.num_env=2"], skip_unknown=True)
        gin.clear_config()
        with pytest.raises(SystemExit, match=r"bad gin binding 'run_actr.num_envs=2': No configurable matching "
                                             r"'run_actr'; did you mean 'run_actor'\?"):
            gin_setup.parse(["classic_vtrace.gin"], ["run_actr.num_envs=2"], skip_unknown=True)
    finally:
        gin.clear_config()


def test_unknown_config_file_lists_the_bundled_ones(tmp_path):
    result = run_role("actors", "--gin_config", "nope.gin")
    assert result.returncode != 0
    assert "'nope.gin' not found" in result.stderr and "atari_vtrace.gin" in result.stderr


def test_a_config_path_is_resolved_by_bare_name_only_where_it_has_no_folder(tmp_path):
    assert gin_setup.resolve_config_path("atari_vtrace.gin") == str(gin_setup.CONFIG_DIR / "atari_vtrace.gin")
    mine = tmp_path / "atari_vtrace.gin"
    mine.write_text("")
    assert gin_setup.resolve_config_path(str(mine)) == str(mine)  # the user's file, not the bundled one
    with pytest.raises(SystemExit, match="'mydir/atari_vtrace.gin' not found"):
        gin_setup.resolve_config_path("mydir/atari_vtrace.gin")  # a typo in the folder is not the bundled file


@pytest.mark.parametrize("config", sorted(p.name for p in gin_setup.CONFIG_DIR.glob("*.gin")))
def test_bundled_configs_parse_for_both_roles(config):
    import actors.actor  # noqa: F401
    import learner.learner  # noqa: F401
    try:
        gin_setup.parse([config], [])
        gin.clear_config()
        gin_setup.parse([config], [], skip_unknown=True)
    finally:
        gin.clear_config()


TASK_CONFIGS = sorted(p.relative_to(gin_setup.TASK_CONFIG_DIR) for p in gin_setup.TASK_CONFIG_DIR.glob("*/*.gin"))


def bound_values(configs, bindings, settings, skip_unknown=False):
    try:
        gin_setup.parse(configs, bindings, skip_unknown=skip_unknown)
        values = {}
        for setting in settings:
            try:
                values[setting] = gin.query_parameter(setting)
            except ValueError:  # not bound: the code's default
                values[setting] = None
        return values
    finally:
        gin.clear_config()


@pytest.mark.parametrize("task", TASK_CONFIGS, ids=str)
def test_a_task_config_is_applied_for_its_game_after_its_family_config_and_before_bindings(task):
    import actors.actor  # noqa: F401
    import learner.learner  # noqa: F401
    family, game, path = f"{task.parent}.gin", task.stem, str(gin_setup.TASK_CONFIG_DIR / task)
    settings = [line.split("=")[0].strip() for line in pathlib.Path(path).read_text().splitlines()
                if "=" in line and not line.startswith("#")]
    other = ["GAME='NoSuchTask-v0'"]
    expected = bound_values([family, path], other, settings)
    for skip_unknown in (False, True):  # the learner's parse and the actor's
        assert bound_values([family], [f"GAME='{game}'"], settings, skip_unknown) == expected
    defaults = bound_values([family], other, settings)
    changed = [s for s in settings if defaults[s] != expected[s] and isinstance(expected[s], (int, float))]
    assert changed, f"{task} changes no number of {family}"
    assert bound_values([family], [f"GAME='{game}'", f"{changed[0]}=12345"], changed)[changed[0]] == 12345


def gin_error(configs, bindings, skip_unknown=True):
    import seed.envs  # noqa: F401
    try:
        with pytest.raises(SystemExit) as exit_info:
            gin_setup.parse(configs, bindings, skip_unknown=skip_unknown)
    finally:
        gin.clear_config()
    message = str(exit_info.value)
    assert "\n" not in message
    return message


def test_a_misspelt_setting_is_named_with_the_nearest_one_and_the_list():
    message = gin_error(["classic_vtrace.gin"], ["create_gym_envs.env_idd='CartPole-v1'"])
    assert message.startswith("error: bad gin binding \"create_gym_envs.env_idd='CartPole-v1'\": ")
    assert "did you mean 'env_id'?" in message
    assert "create_gym_envs's settings: env_id" in message


def test_a_misspelt_configurable_is_named_with_the_nearest_one_by_the_learner():
    import learner.agents  # noqa: F401  the learner registers every configurable and skips none
    message = gin_error([], ["create_atari_env.game='Breakout'"], skip_unknown=False)
    assert "No configurable matching 'create_atari_env'; did you mean 'create_atari_envs'?" in message
    assert "did you mean 'VTraceAgent'?" in gin_error([], ["VTraceAgnt.batch_size=8"], skip_unknown=False)


def test_an_unparsable_binding_is_named():
    assert gin_error([], ["create_atari_envs.frame_size="]).startswith(
        "error: bad gin binding 'create_atari_envs.frame_size=': ")


def test_a_bad_line_in_a_config_file_is_named_with_its_file_and_line(tmp_path):
    config = tmp_path / "mine.gin"
    config.write_text("import seed.envs\ncreate_atari_envs.gamee = 'Pong'\n")
    message = gin_error([str(config)], [])
    assert "did you mean 'game'?" in message and f'(in file "{config}", line 2)' in message


def test_sticky_config_sets_repeat_action_probability():
    import seed.envs  # noqa: F401
    try:
        gin_setup.parse(["atari_vtrace_sticky.gin"], [], skip_unknown=True)
        assert gin.query_parameter("create_atari_envs.repeat_action_probability") == 0.25
        assert gin.query_parameter("%GAME") == "Pong"
    finally:
        gin.clear_config()


def test_learner_reports_bad_settings_found_at_start_in_one_line(tmp_path):
    result = run_role("learner", "--gin_config", "classic_vtrace.gin", "--logdir", str(tmp_path),
                      "--gin_bindings", "training.reward_clipping='tanh'")
    assert result.returncode == 2
    assert "seed-learner: error: unknown reward_clipping 'tanh'; use one of" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_agent_refuses_an_env_whose_action_kind_it_does_not_declare_in_one_line(tmp_path):
    result = run_role("learner", "--gin_config", "classic_vtrace.gin", "--logdir", str(tmp_path),
                      "--gin_bindings", "GAME='Pendulum-v1'")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "seed-learner: error: training.agent: VTraceAgent acts in discrete action spaces; this env has "
        "continuous 1 actions in [-2, 2] (agents for them: @PPOAgent, @SACAgent)")


@pytest.mark.parametrize("role, binding, message", [
    # Before: a batcher that spun on empty batches; a ZeroDivisionError traceback; a traceback.
    ("learner", "inference.batch_size=0", "inference.batch_size must be positive, got 0"),
    ("learner", "VTraceAgent.batch_size=0", "VTraceAgent.batch_size must be positive, got 0"),
    ("actors", "run_actor.num_envs=0", "run_actor.num_envs must be positive, got 0")])
def test_out_of_range_settings_stop_a_role_at_start_in_one_line(role, binding, message, tmp_path):
    result = run_role(role, "--gin_config", "classic_vtrace.gin", "--logdir", str(tmp_path), "--gin_bindings", binding)
    program = {"actors": "seed-actor", "learner": "seed-learner"}[role]
    assert result.returncode == 2 and result.stderr.splitlines()[-1] == f"{program}: error: {message}"
    assert "Traceback" not in result.stderr


def test_unwritable_run_directory_is_a_clear_error_at_start(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = run_role("learner", "--gin_config", "classic_vtrace.gin", "--logdir", str(blocker / "run"))
    assert result.returncode != 0
    assert "is not writable" in result.stderr and "pick another with --logdir" in result.stderr


@pytest.mark.parametrize("role, flag, value, reason", [
    ("learner", "--address", "127.0.0.1:99999", "--address must be HOST:PORT with a port from 0 to 65535"),
    ("actors", "--learner_address", "learner", "--learner_address must be HOST:PORT with a port from 1"),
    ("actors", "--learner_address", "127.0.0.1:0", "--learner_address must be HOST:PORT with a port from 1"),
    ("actors", "--actor_index", "-1", "--actor_index must be 0 or more, got -1")])
def test_bad_address_or_index_flags_fail_at_once_in_one_line(role, flag, value, reason, tmp_path):
    result = run_role(role, "--gin_config", "classic_vtrace.gin", "--logdir", str(tmp_path), flag, value)
    assert result.returncode == 2
    assert reason in result.stderr.splitlines()[-1]


def test_resuming_with_other_settings_is_refused_naming_them_unless_asked_for(tmp_path):
    import learner.learner  # noqa: F401  registers the learner's configurables, as seed-learner does

    try:
        def ask(bindings, resuming=True, allow=False):
            gin.clear_config()
            gin_setup.parse(["atari_vtrace.gin"], bindings)
            gin_setup.check_requested_config(str(tmp_path), resuming, allow)

        ask(["VTraceLoss.entropy_cost=0.005"], resuming=False)  # the start: saved, nothing to compare
        ask(["VTraceLoss.entropy_cost=0.005", "training.total_environment_frames=20_000_000"])  # a budget only
        with pytest.raises(ValueError) as refused:
            ask(["VTraceLoss.entropy_cost=0.01"])
        message = str(refused.value)
        assert "\n" not in message and "VTraceLoss.entropy_cost was 0.005, now 0.01" in message
        assert "--new" in message and "--logdir" in message and "--resume_with_changes" in message
        with pytest.raises(ValueError, match="GAME was 'Pong', now 'Breakout'"):
            ask(["VTraceLoss.entropy_cost=0.005", "GAME='Breakout'"])
        ask(["VTraceLoss.entropy_cost=0.01"], allow=True)  # --resume_with_changes: resumed, and the new settings kept
        ask(["VTraceLoss.entropy_cost=0.01"])
    finally:
        gin.clear_config()


def test_a_run_directory_or_binding_from_before_the_settings_groups_is_refused_saying_what_changed(tmp_path):
    import learner.learner  # noqa: F401

    (tmp_path / gin_setup.REQUESTED_CONFIG).write_text("run_learner.total_environment_frames = 10000\n")
    try:
        gin.clear_config()
        gin_setup.parse(["classic_vtrace.gin"], [])
        with pytest.raises(ValueError, match="started with run_learner.\\* settings; the learner's settings are in "
                                             "four groups now: training.\\*, inference.\\*"):
            gin_setup.check_requested_config(str(tmp_path), resuming=True, allow_changes=True)
        gin.clear_config()
        with pytest.raises(SystemExit, match="No configurable matching 'run_learner'; the learner's settings are in "
                                             "four groups now"):
            gin_setup.parse(["classic_vtrace.gin"], ["run_learner.seed=1"])
    finally:
        gin.clear_config()


@pytest.mark.parametrize("device, code, says", [
    ("cpu", 0, "inference and training on the CPU (inference.device='cpu')"),
    ("gpu", 2, "inference.device='gpu', but TensorFlow finds no usable GPU: "),
    ("tpu", 2, "inference.device='tpu' is unknown; use one of 'auto', 'cpu', 'gpu'")])
def test_the_learner_says_which_device_runs_it_and_refuses_a_gpu_it_cannot_have(device, code, says, tmp_path):
    result = run_role("learner", "--gin_config", "classic_vtrace.gin", "--logdir", str(tmp_path), "--address",
                      "127.0.0.1:0", "--gin_bindings", f"inference.device='{device}'",
                      "--gin_bindings", "training.total_environment_frames=0")  # stops at once after the start
    assert result.returncode == code, result.stderr[-2000:]
    assert says in result.stderr
    if code:
        assert result.stderr.strip().splitlines()[-1].startswith("seed-learner: error: ")
        assert "run_local.sh --gpu" in result.stderr or device == "tpu"
