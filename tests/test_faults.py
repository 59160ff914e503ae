"""Faults injected for real: processes killed with SIGKILL, restarted, and what follows."""
import json
import signal
import time

import pytest

from tests import processes

BINDINGS = ["run_learner.checkpoint_interval_s=1", "run_learner.progress_interval_s=1",
            "run_learner.total_environment_frames=100000000"]


def wait_until(predicate, timeout_s=120.0, what=""):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def latest_frames(logdir):
    path = logdir / "checkpoints" / "checkpoint"
    if not path.exists():
        return 0
    import tensorflow as tf
    reader = tf.train.load_checkpoint(str(logdir / "checkpoints"))
    return int(reader.get_tensor("environment_frames/.ATTRIBUTES/VARIABLE_VALUE"))


def test_learner_killed_and_restarted_resumes_from_its_checkpoint_with_the_same_actors(tmp_path):
    learner = processes.start_learner(tmp_path, "classic_vtrace.gin", BINDINGS)
    address = processes.wait_for_address(tmp_path, learner)
    actors = processes.start_actors(tmp_path, "classic_vtrace.gin", address, 2, ["run_actor.num_envs=2"])
    try:
        wait_until(lambda: latest_frames(tmp_path) > 0, what="a first checkpoint")
        learner.send_signal(signal.SIGKILL)
        learner.wait(30)
        saved = latest_frames(tmp_path)
        learner = processes.start_learner(tmp_path, "classic_vtrace.gin", BINDINGS, address=address)
        processes.wait_for_address(tmp_path, learner)
        wait_until(lambda: latest_frames(tmp_path) > saved, what="training to continue after the restart")
        assert all(actor.poll() is None for actor in actors), "an actor process died with the learner"
        log = (tmp_path / "logs" / "learner.log").read_text()
        assert f"resuming at {saved} environment frames" in log
        assert log.count("actor 'actor_0' connected") == 2 and log.count("actor 'actor_1' connected") == 2
        actor_log = (tmp_path / "logs" / "actor_0.log").read_text()
        assert "stream lost" in actor_log
    finally:
        processes.stop([learner] + actors)


def test_actor_killed_mid_unroll_frees_its_slots_and_a_restarted_one_gets_fresh_slots(tmp_path):
    learner = processes.start_learner(tmp_path, "classic_vtrace.gin", BINDINGS)
    address = processes.wait_for_address(tmp_path, learner)
    actors = processes.start_actors(tmp_path, "classic_vtrace.gin", address, 2, ["run_actor.num_envs=3"])
    try:
        wait_until(lambda: latest_frames(tmp_path) > 0, what="training to start")
        actors[0].send_signal(signal.SIGKILL)
        actors[0].wait(30)
        log_path = tmp_path / "logs" / "learner.log"
        wait_until(lambda: "actor 'actor_0' disconnected (stream lost)" in log_path.read_text(),
                   what="the learner to notice")
        before = latest_frames(tmp_path)
        wait_until(lambda: latest_frames(tmp_path) > before, what="training to go on with the other actor")
        actors[0] = processes.start_actors(tmp_path, "classic_vtrace.gin", address, 1, ["run_actor.num_envs=3"])[0]
        wait_until(lambda: log_path.read_text().count("actor 'actor_0' connected") == 2, what="the restarted actor")
        assert learner.poll() is None
        wait_until(lambda: any(json.loads(line).get("actors/streams_lost") == 1
                               for line in (tmp_path / "progress.jsonl").read_text().splitlines()),
                   what="the lost stream to be counted")
    finally:
        processes.stop([learner] + actors)


def test_sigterm_stops_each_role_cleanly_within_seconds_and_the_learner_checkpoints(tmp_path):
    learner = processes.start_learner(tmp_path, "classic_vtrace.gin", BINDINGS)
    address = processes.wait_for_address(tmp_path, learner)
    actors = processes.start_actors(tmp_path, "classic_vtrace.gin", address, 1, ["run_actor.num_envs=2"])
    try:
        wait_until(lambda: latest_frames(tmp_path) > 0, what="training to start")
        actors[0].send_signal(signal.SIGTERM)
        assert actors[0].wait(10) == 0
        before = latest_frames(tmp_path)
        learner.send_signal(signal.SIGTERM)
        assert learner.wait(10) == 0
        assert latest_frames(tmp_path) >= before
        log = (tmp_path / "logs" / "learner.log").read_text()
        shutdown = log[log.index("SIGTERM: stopping"):]
        assert "saved checkpoint" in shutdown
    finally:
        processes.stop([learner] + actors)
