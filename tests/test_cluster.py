"""Role resolution from the JSON that Vertex AI (CLUSTER_SPEC) and TensorFlow
(TF_CONFIG) set, and seed-launch running a learner replica and an actor replica
for real on loopback."""
import json
import os
import signal
import subprocess
import sys

import pytest

from seed.launchers.cluster import ClusterError, local_path, resolve_role
from tests.processes import REPO_ROOT, child_env, free_loopback_port, last_progress, wait_until

LEARNER = "cmle-training-workerpool0-1f2e3d4c5b-0:2222"
ACTORS = [f"cmle-training-workerpool1-1f2e3d4c5b-{i}:2222" for i in range(3)]


def cluster_spec(task_type, index, learner=LEARNER, actors=ACTORS):
    """The shape Vertex AI documents for CLUSTER_SPEC."""
    return json.dumps({"cluster": {"workerpool0": [learner], "workerpool1": actors},
                       "environment": "cloud", "task": {"type": task_type, "index": index, "trial": ""},
                       "job": json.dumps({"worker_pool_specs": []})})


def test_vertex_ai_learner_and_actor_replicas():
    learner = resolve_role({"CLUSTER_SPEC": cluster_spec("workerpool0", 0)})
    assert (learner.role, learner.learner_address, learner.learner_port, learner.num_actor_replicas) == \
        ("learner", LEARNER, 2222, 3)
    actor = resolve_role({"CLUSTER_SPEC": cluster_spec("workerpool1", 2)})
    assert (actor.role, actor.replica_index, actor.learner_address) == ("actor", 2, LEARNER)


def test_tf_config_chief_and_workers():
    tf_config = {"cluster": {"chief": ["learner-host:2222"], "worker": ["a:2222", "b:2222"]},
                 "task": {"type": "worker", "index": 1}, "environment": "cloud"}
    role = resolve_role({"TF_CONFIG": json.dumps(tf_config)})
    assert (role.role, role.replica_index, role.learner_address) == ("actor", 1, "learner-host:2222")
    tf_config["task"] = {"type": "chief", "index": 0}
    assert resolve_role({"TF_CONFIG": json.dumps(tf_config)}).role == "learner"


def test_cluster_spec_wins_over_tf_config():
    tf_config = json.dumps({"cluster": {"chief": ["x:1"]}, "task": {"type": "chief", "index": 0}})
    assert resolve_role({"CLUSTER_SPEC": cluster_spec("workerpool1", 0), "TF_CONFIG": tf_config}).role == "actor"


@pytest.mark.parametrize("environ, message", [
    ({}, "neither CLUSTER_SPEC nor TF_CONFIG"),
    ({"CLUSTER_SPEC": "{not json"}, "CLUSTER_SPEC is not JSON"),
    ({"CLUSTER_SPEC": json.dumps({"cluster": {}})}, "needs 'cluster' and 'task'"),
    ({"CLUSTER_SPEC": cluster_spec("workerpool2", 0)}, "neither a learner pool"),
    ({"CLUSTER_SPEC": cluster_spec("workerpool1", 5)}, "outside the 3 actor replicas"),
    ({"CLUSTER_SPEC": cluster_spec("workerpool0", 0, learner="no-port")}, "has no port"),
])
def test_bad_cluster_descriptions_name_the_problem(environ, message):
    with pytest.raises(ClusterError, match=message):
        resolve_role(environ)


def test_gcs_paths_map_to_the_vertex_ai_mount():
    assert local_path("gs://bucket/runs/pong") == "/gcs/bucket/runs/pong"
    assert local_path("/tmp/run") == "/tmp/run"


def children(pid):
    path = f"/proc/{pid}/task/{pid}/children"
    return [int(c) for c in open(path).read().split()] if os.path.exists(path) else []


def launch(logdir, spec, *args):
    env = dict(child_env(), CLUSTER_SPEC=spec)
    return subprocess.Popen([sys.executable, "-m", "seed.launchers.launch", "--logdir", str(logdir), "--listen_host",
                             "127.0.0.1", "--gin_config", "classic_vtrace.gin", *args],
                            env=env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_seed_launch_runs_learner_and_actor_replicas_and_restarts_a_killed_actor_and_learner(tmp_path):
    learner_address = f"127.0.0.1:{free_loopback_port()}"
    actors = [f"127.0.0.1:{free_loopback_port()}"]  # an actor replica's own address; actors listen on nothing
    bindings = ["--gin_bindings", "reporting.progress_interval_s=1", "--gin_bindings", "run_actor.num_envs=2",
                "--gin_bindings", "training.checkpoint_interval_s=1"]
    learner = launch(tmp_path, cluster_spec("workerpool0", 0, learner_address, actors), *bindings)
    replica = launch(tmp_path, cluster_spec("workerpool1", 0, learner_address, actors), "--actors_per_replica", "2",
                     *bindings)
    try:
        wait_until(lambda: last_progress(tmp_path).get("env_frames", 0) > 2000, 180,
                   "training steps from the actor replica")
        actor_pids = children(replica.pid)
        assert len(actor_pids) == 2
        os.kill(actor_pids[0], signal.SIGKILL)  # as the OOM killer would
        wait_until(lambda: len(set(children(replica.pid)) - set(actor_pids)) == 1, 60, "the actor's restart")
        frames = last_progress(tmp_path).get("env_frames", 0)
        wait_until(lambda: last_progress(tmp_path).get("env_frames", 0) > frames + 2000, 120,
                   "training after the restart")
        log = (tmp_path / "logs" / "launch_actors_0.log").read_text()
        assert "died from signal 9; restarting it" in log

        (learner_pid,) = children(learner.pid)
        trained = last_progress(tmp_path)["frames"]
        os.kill(learner_pid, signal.SIGKILL)
        wait_until(lambda: children(learner.pid) not in ([], [learner_pid]), 60, "the learner's restart")
        # The new learner resumed from a checkpoint at most ~1 s old and the actors stream to it again.
        wait_until(lambda: last_progress(tmp_path).get("frames", 0) > trained + 2000, 180,
                   "training after the learner restart")
        log = (tmp_path / "logs" / "launch_learner.log").read_text()
        assert "learner process 0 died from signal 9; restarting it" in log and "restart 1 of 3" in log
        assert "resuming at" in (tmp_path / "logs" / "learner.log").read_text()
    finally:
        for p in (replica, learner):
            p.send_signal(signal.SIGTERM)
        assert replica.wait(60) == 0 and learner.wait(60) == 0
