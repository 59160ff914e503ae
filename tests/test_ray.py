"""seed-ray on a real local multi-node Ray cluster (ray.cluster_utils.Cluster), run in a
network namespace of its own so every server Ray starts stays private to the test.
Skipped with the reason where Ray is not installed or namespaces cannot be created."""
import json
import shutil
import subprocess
import sys

import pytest

from tests.processes import REPO_ROOT, child_env


def test_learner_lands_on_the_gpu_node_actors_elsewhere_and_a_killed_actor_restarts(tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("cannot create a network namespace here (unshare -n needs root)")
    env = dict(child_env(), RAY_USAGE_STATS_ENABLED="0", RAY_DISABLE_DOCKER_CPU_WARNING="1")
    result = subprocess.run(
        ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" -m tests.ray_scenario "$1"',
         sys.executable, str(tmp_path)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-5000:]
    outcome = json.loads(lines[-1])
    assert outcome["learner_node"] == outcome["gpu_node"]  # where the resources say
    assert set(outcome["actor_nodes"]) == {outcome["cpu_node"]}  # not the learner's node, not the 0-CPU head
    assert outcome["actor_restarts"] >= 1 and outcome["streams_lost"] >= 1
    assert outcome["learner_exit"] == 0
