"""./run_local.sh as a user runs it: start, Ctrl-C, and the same command again."""
import glob
import os
import queue
import shutil
import signal
import subprocess
import threading
import time

import pytest
import tensorflow as tf

from tests.processes import REPO_ROOT


class RunLocal:
    started = []  # every run a test started, so a failing test leaves none running

    def __init__(self, *args, env=None):
        # Its own session, like a terminal's foreground job: Ctrl-C goes to the whole group.
        self.process = subprocess.Popen(["./run_local.sh", *args], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                        env=dict(os.environ, **(env or {})))
        RunLocal.started.append(self)
        self.lines = queue.Queue()
        self.output = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line)

    def wait_for(self, text, timeout_s=300.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            self.output.append(line)
            if text in line:
                return line
        pytest.fail(f"{text!r} never appeared:\n{''.join(self.output[-40:])}")

    def learner_pid(self) -> int:
        """The learner process run_local.sh started (its direct child)."""
        return int(subprocess.run(["pgrep", "-P", str(self.process.pid), "-f", "learner --logdir"],
                                  capture_output=True, text=True, check=True).stdout.split()[0])

    def remaining_output(self) -> str:
        """Everything printed since the last wait_for, once the process has exited."""
        self.process.wait(60)
        lines = []
        while True:
            try:
                lines.append(self.lines.get(timeout=2.0))
            except queue.Empty:
                return "".join(lines)

    def ctrl_c(self, timeout_s=30.0) -> int:
        os.killpg(self.process.pid, signal.SIGINT)
        code = self.process.wait(timeout_s)
        # Nothing it started is left running. A zombie (state Z) is not: it has exited and holds only its
        # pid until init reaps it, which happens after the launcher's own exit when a grandchild (a
        # subprocess TensorFlow or TensorBoard ran) is orphaned in its last instant.
        running = [m for m in group_members(self.process.pid) if m.split()[1] != "Z"]
        if running:
            pytest.fail(f"left in run_local.sh's process group after it exited: {running}")
        return code


def group_members(pgid: int) -> list[str]:
    """'PID STATE COMMAND' of each process in process group `pgid` (from /proc), to name what lingered."""
    members = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                pid, rest = f.read().split(" (", 1)
            state, _, pgrp = rest.rsplit(") ", 1)[1].split()[:3]
            if int(pgrp) == pgid:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    command = f.read().replace(bytes(1), b" ").decode(errors="replace")[:200]
                members.append(f"{pid} {state} {command}")
        except (OSError, ValueError):
            continue  # it exited while we read
    return members


@pytest.fixture(autouse=True)
def no_run_left_behind():
    yield
    while RunLocal.started:
        run = RunLocal.started.pop()
        try:
            os.killpg(run.process.pid, signal.SIGKILL)  # the group: run_local.sh and what it started
        except ProcessLookupError:
            pass
        run.process.wait(30)


def saved_frames(logdir):
    reader = tf.train.load_checkpoint(str(logdir / "checkpoints"))
    return int(reader.get_tensor("environment_frames/.ATTRIBUTES/VARIABLE_VALUE"))


def test_ctrl_c_stops_every_process_saves_and_the_same_command_resumes(tmp_path):
    command = ("classic", "vtrace", "2", "2", "--logdir", str(tmp_path))
    run = RunLocal(*command)
    run.wait_for("loss policy")  # a progress line after training began
    run.ctrl_c()
    frames = saved_frames(tmp_path)
    assert frames > 0
    assert f"stopped; the last checkpoint holds {frames:,} environment frames, saved " in run.remaining_output()

    run = RunLocal(*command)
    run.wait_for(f"resuming at {frames} environment frames")
    run.wait_for("loss policy")
    run.ctrl_c()
    assert saved_frames(tmp_path) > frames


def test_bad_arguments_fail_with_a_one_line_reason():
    result = subprocess.run(["./run_local.sh", "atari", "dqn", "1", "1"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "no config for ENV 'atari' and AGENT 'dqn'" in result.stderr
    result = subprocess.run(["./run_local.sh", "atari", "vtrace", "four", "1"], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "NUM_ACTORS must be a positive integer" in result.stderr


def test_new_with_the_logdir_of_an_existing_run_is_refused_instead_of_resuming_it(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "checkpoint").write_text("an earlier run's checkpoint")
    result = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "1", "--logdir", str(tmp_path), "--new"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"--new, but --logdir {tmp_path} holds a run with a checkpoint" in result.stderr


def test_a_game_binding_names_the_run_and_a_binding_of_the_game_setting_itself_is_refused():
    # The env id does not exist, so the learner stops at start, after the run directory is named.
    result = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "1", "--new", "--gin_bindings",
                             "GAME='SeedNoSuchEnv-v1'"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert "run directory runs/SeedNoSuchEnv-v1_vtrace_" in result.stderr and result.returncode != 0, result.stderr
    assert "cannot make gymnasium env 'SeedNoSuchEnv-v1'" in result.stderr  # the binding reached the env
    result = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "1", "--gin_bindings",
                             "create_gym_envs.env_id='Acrobot-v1'"], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "would train another game than the run directory says; use --game" in \
        result.stderr
    for family, binding in (("dmc", "create_dmc_envs.task='walker-walk'"),
                            ("football", "create_football_envs.scenario='5_vs_5'")):
        result = subprocess.run(["./run_local.sh", family, "vtrace" if family == "football" else "sac", "1", "1",
                                 "--gin_bindings", binding], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and "would train another game than the run directory says" in result.stderr


def test_the_run_stops_with_the_reason_when_every_actor_has_given_up(tmp_path):
    """Before, the learner waited for ever for the actors it had refused."""
    run = subprocess.Popen(["./run_local.sh", "classic", "vtrace", "1", "300", "--logdir", str(tmp_path)],
                           cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, stderr = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)  # the learner too, if the script hung
    assert run.returncode == 2
    assert "run_local.sh: every actor has exited; actor_0 said:" in stderr
    assert "300 envs can never fit in inference.max_env_slots = 256" in stderr


def test_a_failed_start_leaves_no_new_run_directory_and_keeps_an_existing_one(tmp_path):
    """A typo leaves nothing in runs/, and never touches a directory that was there before."""
    runs = REPO_ROOT / "runs"
    before = set(runs.glob("CartPole-v1_vtrace_*"))
    bad = ["--gin_bindings", "run_actor.num_envz=3"]
    result = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "1", "--new", *bad], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "doesn't have a parameter named 'num_envz'" in result.stderr
    assert set(runs.glob("CartPole-v1_vtrace_*")) == before
    assert "run_local.sh: removed runs/CartPole-v1_vtrace_" in result.stderr
    assert "restarting" not in result.stderr  # a configuration error is final, never restarted

    (tmp_path / "kept").write_text("an earlier run's file")
    result = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "1", "--logdir", str(tmp_path), *bad],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and (tmp_path / "kept").exists()


def test_the_plain_command_resumes_the_newest_run_with_a_checkpoint():
    """A newer directory without one (a start stopped early) does not hide the run that trained."""
    runs = REPO_ROOT / "runs"
    trained, newer = runs / "SeedNoSuchEnv-v0_vtrace_20000101_000000", runs / "SeedNoSuchEnv-v0_vtrace_20000102_000000"
    try:
        (trained / "checkpoints").mkdir(parents=True)
        (trained / "checkpoints" / "checkpoint").write_text("")
        (newer / "logs").mkdir(parents=True)
        # The env id does not exist, so the learner stops at start, after the choice is made.
        result = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "1", "--game", "SeedNoSuchEnv-v0"],
                                cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert (f"resuming runs/{trained.name} (--new starts a fresh run; runs/{newer.name} is newer but has "
                "no checkpoint)") in result.stderr, result.stderr
        assert result.returncode != 0 and trained.exists()
    finally:
        shutil.rmtree(trained, ignore_errors=True)
        shutil.rmtree(newer, ignore_errors=True)


def test_tensorboard_flag_serves_the_run_on_loopback_and_stops_with_it(tmp_path):
    import re
    import urllib.request

    run = RunLocal("classic", "vtrace", "1", "2", "--logdir", str(tmp_path), "--tensorboard")
    line = run.wait_for("tensorboard at http://127.0.0.1:")
    url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
    run.wait_for("loss policy")  # scalars exist by now
    deadline = time.monotonic() + 120
    while True:  # TensorBoard loads for a few seconds after its process starts
        try:
            with urllib.request.urlopen(url + "data/runs", timeout=5) as response:
                runs = response.read().decode()
            if "summaries" in runs:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, f"TensorBoard at {url} did not list the run's summaries"
        time.sleep(1)
    assert run.ctrl_c() in (0, 130)  # ctrl_c also checks that TensorBoard was stopped with the rest
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)


def test_a_learner_killed_before_its_first_checkpoint_is_reported_as_such(tmp_path):
    """SIGKILL (as the out-of-memory killer sends) leaves no checkpoint when none was due yet:
    run_local.sh must say so instead of promising a resume."""
    run = RunLocal("classic", "vtrace", "1", "2", "--logdir", str(tmp_path),
                   "--gin_bindings", "training.checkpoint_interval_s=3600",
                   env={"SEED_LEARNER_RESTARTS": "0"})  # so the run stops instead of restarting its learner
    run.wait_for("loss policy")
    os.kill(run.learner_pid(), signal.SIGKILL)
    output = run.remaining_output()
    assert run.process.returncode != 0
    assert "the learner died (signal KILL) after 0 restarts; giving up (SEED_LEARNER_RESTARTS=0)" in output
    assert f"stopped; {tmp_path} has no checkpoint, so the same command starts this run from the beginning" in output
    assert not (tmp_path / "checkpoints" / "latest.json").exists()


def test_a_killed_learner_is_restarted_from_its_checkpoint_and_training_continues(tmp_path):
    run = RunLocal("classic", "vtrace", "1", "2", "--logdir", str(tmp_path),
                   "--gin_bindings", "training.checkpoint_interval_s=1")
    run.wait_for("loss policy")
    deadline = time.monotonic() + 60
    while not (tmp_path / "checkpoints" / "latest.json").exists():  # the first periodic checkpoint
        assert time.monotonic() < deadline, "no checkpoint within 60 s at checkpoint_interval_s=1"
        time.sleep(0.5)
    os.kill(run.learner_pid(), signal.SIGKILL)
    run.wait_for("the learner died (signal KILL); restarting it from its latest checkpoint")
    resumed = run.wait_for("resuming at ")
    frames = int(resumed.split("resuming at ")[1].split()[0])
    assert frames > 0
    line = run.wait_for("loss policy")  # the same actor streams to the new learner and it trains on
    assert int(line.split()[1].replace(",", "")) > frames
    run.ctrl_c()
    assert saved_frames(tmp_path) > frames


def test_frames_sets_the_budget_the_start_is_quiet_and_a_changed_resume_is_refused(tmp_path):
    run = RunLocal("classic", "vtrace", "1", "2", "--frames", "3k", "--logdir", str(tmp_path))
    assert run.process.wait(300) == 0
    output = run.remaining_output()
    assert "budget 3,000 env frames" in output and "inference and training on the CPU" in output
    # only seed's own lines: no TensorFlow start-up chatter, no INFO records (they are in logs/learner.log)
    noise = [line for line in output.splitlines() if " INFO " in line or "absl::InitializeLog" in line
             or "cudart_stub" in line or "cpu_feature_guard" in line]
    assert not noise, noise
    assert "resuming" not in output and saved_frames(tmp_path) >= 3000

    changed = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "2", "--frames", "4k", "--logdir",
                              str(tmp_path), "--gin_bindings", "VTraceLoss.entropy_cost=0.02"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=300)
    assert changed.returncode == 2
    (error,) = [line for line in changed.stderr.splitlines() if "error" in line]
    assert "VTraceLoss.entropy_cost was 0.01, now 0.02" in error and "--resume_with_changes" in error
    assert (tmp_path / "checkpoints" / "checkpoint").exists()  # the run directory is kept as it was

    bad = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "2", "--frames", "lots"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--frames takes env frames like 10M" in bad.stderr

    run = RunLocal("classic", "vtrace", "1", "2", "--frames", "4k", "--logdir", str(tmp_path), "--gin_bindings",
                   "VTraceLoss.entropy_cost=0.02", "--resume_with_changes")
    run.wait_for("resuming at ")
    assert run.process.wait(300) == 0
    assert saved_frames(tmp_path) >= 4000


def test_a_reader_that_goes_away_stops_the_run_as_ctrl_c_does(tmp_path):
    """`./run_local.sh ... | head`: once the pipe closes, every process stops, the learner with a
    checkpoint, and none is left behind (a learner used to hang on its next progress line)."""
    process = subprocess.Popen(["./run_local.sh", "classic", "vtrace", "1", "2", "--logdir", str(tmp_path)],
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while "loss policy" not in process.stdout.readline():  # training has begun
            assert time.monotonic() < deadline and process.poll() is None, "no training progress line"
        process.stdout.close()
        process.wait(120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert saved_frames(tmp_path) > 0
    left = subprocess.run(["pgrep", "-f", f"--logdir {tmp_path}"], capture_output=True, text=True).stdout.split()
    assert not left, f"processes of the run still alive: {left}"


def test_a_dm_control_task_trains_sac_to_its_budget_and_reports_whole_episodes(tmp_path):
    """The dmc family end to end: walker-walk's 1,000 control steps an episode, 250 agent steps under
    an action repeat of 4, frames counting control steps."""
    result = subprocess.run(["./run_local.sh", "dmc", "sac", "1", "2", "--game", "walker-walk", "--frames", "2400",
                             "--logdir", str(tmp_path), "--gin_bindings", "create_dmc_envs.action_repeat=4",
                             "--gin_bindings", "SACAgent.min_replay_size=200"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "SACAgent on observations 24 float32, continuous 6 actions in [-1, 1] (4 frames per agent step)" in \
        result.stderr
    assert saved_frames(tmp_path) >= 2400
    rows = [line.split(",") for line in (tmp_path / "episodes.csv").read_text().splitlines()[1:]]
    assert len(rows) == 2 and all(int(r[3]) == 1000 and float(r[1]) > 0 for r in rows)
    reader = tf.train.load_checkpoint(str(tmp_path / "checkpoints"))
    assert int(reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")) > 0  # SAC trained


def test_a_deepmind_lab_level_trains_vtrace_with_the_stand_in_engine_and_one_level_cache(tmp_path):
    """The dmlab family end to end against tests/stand_ins/deepmind_lab (DeepMind Lab cannot be built
    here): SEED RL's frames and actions through V-trace with an LSTM, the map compiled once for all envs."""
    cache = tmp_path / "level_cache"
    result = subprocess.run(["./run_local.sh", "dmlab", "vtrace", "1", "2", "--frames", "1600", "--logdir",
                             str(tmp_path), "--gin_bindings", f"create_dmlab_envs.level_cache_dir='{cache}'",
                             "--gin_bindings", "VTraceAgent.unroll_length=10", "--gin_bindings",
                             "VTraceAgent.batch_size=2"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT / "tests" / "stand_ins")))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "VTraceAgent on observations 72x96x3 uint8, 9 actions (4 frames per agent step)" in result.stderr
    assert saved_frames(tmp_path) >= 1600
    rows = [line.split(",") for line in (tmp_path / "episodes.csv").read_text().splitlines()[1:]]
    assert rows and all(int(r[3]) == 240 for r in rows)  # the stand-in's episodes, in engine frames
    assert len([p for p in cache.rglob("*") if p.is_file()]) == 1


def test_a_football_scenario_trains_vtrace_on_stacked_mini_maps(tmp_path):
    """The football family end to end on envpool's engine: 4 SMM planes x 4 frames into the network."""
    result = subprocess.run(["./run_local.sh", "football", "vtrace", "1", "2", "--game", "academy_empty_goal_close",
                             "--frames", "800", "--logdir", str(tmp_path), "--gin_bindings", "VTraceAgent.batch_size=2",
                             "--gin_bindings", "VTraceAgent.minibatches=1"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "VTraceAgent on observations 72x96x4 uint8, 19 actions" in result.stderr
    assert saved_frames(tmp_path) >= 800
    assert len((tmp_path / "episodes.csv").read_text().splitlines()) > 1  # academy episodes are short


def test_a_procgen_game_trains_vtrace_with_the_impala_cnn_on_rgb_frames(tmp_path):
    import ctypes.util
    if ctypes.util.find_library("Qt5Gui") is None:
        pytest.skip("Procgen needs the Qt 5 runtime: apt install libqt5gui5 (tests/run.sh does, as root)")
    result = subprocess.run(["./run_local.sh", "procgen", "vtrace", "1", "4", "--game", "bigfish", "--frames", "1600",
                             "--logdir", str(tmp_path), "--gin_bindings", "VTraceAgent.batch_size=4",
                             "--gin_bindings", "VTraceAgent.minibatches=2"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "VTraceAgent on observations 64x64x3 uint8, 15 actions" in result.stderr
    assert saved_frames(tmp_path) >= 1600
