"""The transport benchmark runs end to end and reports every measurement it promises.
Speeds are printed, never asserted: only that each part ran and moved env steps."""
import json
import subprocess
import sys

from tests.processes import REPO_ROOT, child_env


def test_transport_benchmark_reports_raw_floor_grpc_only_and_system():
    out = subprocess.run([sys.executable, "benchmarks/transport.py", "--actors", "1", "--envs", "2",
                          "--seconds", "2"], cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    results = {r["benchmark"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert set(results) == {"raw_env_stepping", "grpc_floor", "grpc_only", "transport"}
    for name in ("raw_env_stepping", "grpc_only", "transport"):
        assert results[name]["agent_steps_per_s"] > 0, results[name]
    assert results["grpc_floor"]["client_cpu_ms"] > 0 < results["grpc_floor"]["server_cpu_ms"]
    assert 0 < results["grpc_floor"]["ceiling_ratio"] < 1
    assert results["transport"]["ratio_to_grpc_only"] > 0
