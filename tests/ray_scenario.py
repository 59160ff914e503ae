"""The seed-ray scenario tests/test_ray.py runs inside a private network namespace:
a local Ray cluster of three nodes with different resources, a job placed on it,
an actor process killed, and what happened, printed as one JSON line."""
import json
import os
import signal
import sys
import time

import ray
from ray.cluster_utils import Cluster

from seed.launchers.ray_launch import RayJob
from tests.processes import last_progress

NODE = {"node_ip_address": "127.0.0.1", "include_dashboard": False, "object_store_memory": 80 << 20}


def wait_for(condition, timeout_s, what, job):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job.supervise_once()
        if condition():
            return
        time.sleep(1.0)
    raise SystemExit(f"timed out waiting for {what}: {last_progress(job.logdir)}")


def main(logdir):
    cluster = Cluster(initialize_head=True, head_node_args=dict(NODE, num_cpus=0))  # the driver's node
    gpu_node = cluster.add_node(**NODE, num_cpus=1, num_gpus=1)
    cpu_node = cluster.add_node(**NODE, num_cpus=2)
    ray.init(address=cluster.address)
    job = RayJob(["--gin_config", "classic_vtrace.gin", "--gin_bindings", "reporting.progress_interval_s=1",
                  "--gin_bindings", "run_actor.num_envs=2"], logdir, num_actors=2, learner_host="127.0.0.1",
                 learner_gpus=1, env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    result = {"learner_node": job.learner_node, "gpu_node": gpu_node.node_id, "cpu_node": cpu_node.node_id,
              "actor_nodes": [ray.get(a.node.remote())[0] for a in job.actors]}
    try:
        wait_for(lambda: last_progress(logdir).get("updates", 0) >= 10, 240, "training updates", job)
        os.kill(ray.get(job.actors[0].pid.remote()), signal.SIGKILL)
        updates = last_progress(logdir)["updates"]
        wait_for(lambda: job.actor_restarts >= 1 and last_progress(logdir).get("actors/connected") == 2
                 and last_progress(logdir)["updates"] >= updates + 10, 180, "the killed actor's restart", job)
        result.update(actor_restarts=job.actor_restarts, updates=last_progress(logdir)["updates"],
                      streams_lost=last_progress(logdir)["actors/streams_lost"])
    finally:
        result["learner_exit"] = job.stop()
        ray.shutdown()
        cluster.shutdown()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
