"""The components, transport and XLA benchmarks run end to end and report every measurement they promise.
Speeds are printed, never asserted: only that each part ran and measured something."""
import json
import subprocess
import sys

from tests.processes import REPO_ROOT, child_env


def run_benchmark(script: str, *args: str, timeout_s: float = 600):
    """Runs benchmarks/<script> with `args`; returns its JSON lines, failing on a non-zero exit."""
    out = subprocess.run([sys.executable, f"benchmarks/{script}", *args], cwd=REPO_ROOT, env=child_env(),
                         capture_output=True, text=True, timeout=timeout_s)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_transport_benchmark_reports_raw_floor_grpc_only_and_system():
    records = run_benchmark("transport.py", "--actors", "1", "--envs", "2", "--seconds", "2", timeout_s=300)
    results = {r["benchmark"]: r for r in records}
    assert set(results) == {"raw_env_stepping", "grpc_floor", "grpc_only", "transport"}
    for name in ("raw_env_stepping", "grpc_only", "transport"):
        assert results[name]["agent_steps_per_s"] > 0, results[name]
    assert results["grpc_floor"]["client_cpu_ms"] > 0 < results["grpc_floor"]["server_cpu_ms"]
    assert 0 < results["grpc_floor"]["ceiling_ratio"] < 1
    assert results["transport"]["ratio_to_grpc_only"] > 0


def test_xla_benchmark_compares_every_component_both_ways():
    records = run_benchmark("xla.py", "--seconds", "0.2", "--rounds", "1", "--batches", "8", "--r2d2_batch", "1")
    components = {"vtrace_training_step", "policy_batch_8", "r2d2_training_step"}
    measured = {(r["component"], r["mode"]) for r in records if "per_s" in r and r["per_s"] > 0}
    assert measured == {(c, mode) for c in components for mode in ("default", "xla")}
    summaries = {r["component"]: r for r in records if r.get("summary")}
    assert set(summaries) == components
    assert all(s["xla_over_default_median"] > 0 for s in summaries.values())


def test_components_benchmark_reports_every_component_and_a_bound_below_each():
    records = run_benchmark("components.py", "--envs", "16", "--seconds", "0.2")
    by_component = {}
    for r in records:
        by_component.setdefault(r["component"], []).append(r)
    assert set(by_component) == {"env_stepping", "inference", "training_step", "bound"}
    inference = {r["batch"]: r["observations_per_s"] for r in by_component["inference"]}
    assert set(inference) == {1, 8, 16, 32, 64, 128} and min(inference.values()) > 0
    bound = by_component["bound"][0]
    assert bound["inference_batch"] == 16  # the learner serves every one of the 16 envs in one batch
    slowest = min(by_component["env_stepping"][0]["agent_steps_per_s"], inference[16],
                  by_component["training_step"][0]["agent_steps_per_s"])
    assert 0 < bound["agent_steps_per_s"] < slowest  # the parts share one machine
