"""Faults injected for real: processes killed with SIGKILL, restarted, and what follows."""
import contextlib
import json
import signal

from tests import processes
from tests.processes import wait_until

BINDINGS = ["training.checkpoint_interval_s=1", "reporting.progress_interval_s=1",
            "training.total_environment_frames=100000000"]


def latest_frames(logdir):
    path = logdir / "checkpoints" / "checkpoint"
    if not path.exists():
        return 0
    import tensorflow as tf
    reader = tf.train.load_checkpoint(str(logdir / "checkpoints"))
    return int(reader.get_tensor("environment_frames/.ATTRIBUTES/VARIABLE_VALUE"))


@contextlib.contextmanager
def training(logdir, num_actors, envs_per_actor):
    """A learner and actors on CartPole, handed over once the first checkpoint exists; all stopped after."""
    learner = processes.start_learner(logdir, "classic_vtrace.gin", BINDINGS)
    running = [learner]
    try:
        address = processes.wait_for_address(logdir, learner)
        running += processes.start_actors(logdir, "classic_vtrace.gin", address, num_actors,
                                          [f"run_actor.num_envs={envs_per_actor}"])
        wait_until(lambda: latest_frames(logdir) > 0, what="training to start")
        yield address, running
    finally:
        processes.stop(running)


def test_learner_killed_and_restarted_resumes_from_its_checkpoint_with_the_same_actors(tmp_path):
    with training(tmp_path, num_actors=2, envs_per_actor=2) as (address, running):
        learner, actors = running[0], running[1:]
        learner.send_signal(signal.SIGKILL)
        learner.wait(30)
        saved = latest_frames(tmp_path)
        running[0] = processes.start_learner(tmp_path, "classic_vtrace.gin", BINDINGS, address=address)
        processes.wait_for_address(tmp_path, running[0])
        wait_until(lambda: latest_frames(tmp_path) > saved, what="training to continue after the restart")
        assert all(actor.poll() is None for actor in actors), "an actor process died with the learner"
        log_path = tmp_path / "logs" / "learner.log"
        assert f"resuming at {saved} environment frames" in log_path.read_text()
        wait_until(lambda: all(log_path.read_text().count(f"actor 'actor_{i}' connected") == 2 for i in (0, 1)),
                   what="both actors to reconnect")
        assert "stream lost" in (tmp_path / "logs" / "actor_0.log").read_text()


def test_actor_killed_mid_unroll_frees_its_slots_and_a_restarted_one_gets_fresh_slots(tmp_path):
    with training(tmp_path, num_actors=2, envs_per_actor=3) as (address, running):
        running[1].send_signal(signal.SIGKILL)
        running[1].wait(30)
        log_path = tmp_path / "logs" / "learner.log"
        wait_until(lambda: "actor 'actor_0' disconnected (stream lost)" in log_path.read_text(),
                   what="the learner to notice")
        before = latest_frames(tmp_path)
        wait_until(lambda: latest_frames(tmp_path) > before, what="training to go on with the other actor")
        running[1] = processes.start_actors(tmp_path, "classic_vtrace.gin", address, 1, ["run_actor.num_envs=3"])[0]
        wait_until(lambda: log_path.read_text().count("actor 'actor_0' connected") == 2, what="the restarted actor")
        assert running[0].poll() is None
        wait_until(lambda: any(json.loads(line).get("actors/streams_lost") == 1
                               for line in (tmp_path / "progress.jsonl").read_text().splitlines()),
                   what="the lost stream to be counted")


def test_sigterm_stops_each_role_cleanly_within_seconds_and_the_learner_checkpoints(tmp_path):
    with training(tmp_path, num_actors=1, envs_per_actor=2) as (_, running):
        learner, actor = running
        actor.send_signal(signal.SIGTERM)
        assert actor.wait(10) == 0
        before = latest_frames(tmp_path)
        learner.send_signal(signal.SIGTERM)
        assert learner.wait(10) == 0
        assert latest_frames(tmp_path) >= before
        log = (tmp_path / "logs" / "learner.log").read_text()
        assert "saved checkpoint" in log[log.index("SIGTERM: stopping"):]


def test_diverging_training_stops_the_learner_with_a_clear_error_and_no_checkpoint_over_the_good_one(tmp_path):
    # A learning rate this large turns the weights non-finite after the first update.
    diverging = BINDINGS + ["create_optimizer.learning_rate=1e30", "training.max_consecutive_skipped_updates=5",
                            "training.checkpoint_interval_s=1000000"]
    learner = processes.start_learner(tmp_path, "classic_vtrace.gin", diverging)
    actors = []
    try:
        address = processes.wait_for_address(tmp_path, learner)
        actors = processes.start_actors(tmp_path, "classic_vtrace.gin", address, 1, ["run_actor.num_envs=4"])
        assert learner.wait(300) == 1
    finally:
        processes.stop([learner] + actors)
    log = (tmp_path / "logs" / "learner.log").read_text()
    assert "5 updates in a row had a non-finite loss or gradient" in log
    assert "no checkpoint written after the failure" in log
    assert not (tmp_path / "checkpoints" / "checkpoint").exists()
