"""End to end: training frames/s of a real run over the component bound, measured in one invocation.

    .venv/bin/python benchmarks/end_to_end.py [--actors 4] [--envs 4] [--frames 400000]
    .venv/bin/python benchmarks/end_to_end.py --memory_minutes 10   # also: is the learner's memory flat?

First benchmarks/components.py runs (same config, actors x envs envs) for the
bound 1 / sum(1 / throughput) on this machine; then the configuration that
`./run_local.sh atari vtrace ACTORS ENVS` runs trains for `--warmup_frames`,
then for `--frames` more, which are timed. Prints JSON lines: the bound, the
measured run (training frames/s, mean inference batch, the learner round trip
actors see per step, p50 and p99), their ratio, and with --memory_minutes the
learner's resident memory sampled over that long a window after warm-up.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, REPO)


def emit(**record):
    print(json.dumps(record), flush=True)
    return record


def component_bound(config: str, envs: int, seconds: float) -> dict:
    out = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "components.py"), "--config", config,
                          "--envs", str(envs), "--seconds", str(seconds)],
                         check=True, capture_output=True, text=True).stdout
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return next(r for r in records if r["component"] == "bound")


def resident_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def read_jsonl(path: str) -> list:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def run(config: str, actors: int, envs: int, warmup_frames: int, frames: int, memory_minutes: float,
        bindings, timeout_s: float) -> dict:
    """Trains in a run directory removed afterwards and returns the timed window's measurements."""
    with tempfile.TemporaryDirectory(prefix="seed_end_to_end_") as logdir:
        return _train_and_measure(logdir, config, actors, envs, warmup_frames, frames, memory_minutes, bindings,
                                  timeout_s)


def _train_and_measure(logdir: str, config: str, actors: int, envs: int, warmup_frames: int, frames: int,
                       memory_minutes: float, bindings, timeout_s: float) -> dict:
    from tests import processes
    learner = processes.start_learner(logdir, config, ["reporting.progress_interval_s=2",
                                                       "training.checkpoint_interval_s=1e9", *bindings])
    running = [learner]
    progress = os.path.join(logdir, "progress.jsonl")
    memory = []
    try:
        address = processes.wait_for_address(logdir, learner)
        running += processes.start_actors(logdir, config, address, actors,
                                          [f"run_actor.num_envs={envs}", "run_actor.progress_interval_s=2",
                                           *bindings])
        deadline = time.monotonic() + timeout_s
        start = end = None
        while end is None:
            if time.monotonic() > deadline or learner.poll() is not None:
                raise RuntimeError(f"no {warmup_frames + frames} training frames within {timeout_s} s:\n"
                                   + processes.learner_output(logdir))
            time.sleep(2)  # polls the files the learner writes every 2 s
            records = read_jsonl(progress)
            if start is None and records and records[-1]["frames"] >= warmup_frames:
                start, window_start = records[-1], len(records)
                memory_until = time.monotonic() + 60 * memory_minutes
            if start is not None:
                memory.append(resident_mb(learner.pid))
                if records[-1]["frames"] >= warmup_frames + frames and time.monotonic() >= memory_until:
                    end = records[-1]
    finally:
        processes.stop(running)
    window = read_jsonl(progress)[window_start:]
    window = [r for r in window if r["time"] <= end["time"]]
    actor_records = [r for name in os.listdir(os.path.join(logdir, "actors"))
                     for r in read_jsonl(os.path.join(logdir, "actors", name))
                     if start["time"] < r["time"] <= end["time"]]
    result = {"training_frames_per_s": (end["frames"] - start["frames"]) / (end["time"] - start["time"]),
              "env_frames_per_s": (end["env_frames"] - start["env_frames"]) / (end["time"] - start["time"]),
              "timed_frames": end["frames"] - start["frames"],
              "mean_inference_batch": sum(r["inference_batch_size"] for r in window) / len(window),
              "actor_round_trip_ms_p50": median([r["round_trip_ms_p50"] for r in actor_records]),
              "actor_round_trip_ms_p99": median([r["round_trip_ms_p99"] for r in actor_records]),
              "actor_wait_ms_p50": median([r["wait_ms_p50"] for r in actor_records]),
              "actor_wait_ms_p99": median([r["wait_ms_p99"] for r in actor_records])}
    if memory_minutes:
        result["learner_rss_mb"] = {"first": memory[0], "last": memory[-1], "min": min(memory), "max": max(memory),
                                    "samples": len(memory), "minutes": memory_minutes,
                                    "change": memory[-1] / memory[0] - 1}
    return result


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="atari_vtrace.gin")
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--envs", type=int, default=4, help="envs per actor")
    parser.add_argument("--warmup_frames", type=int, default=100_000)
    parser.add_argument("--frames", type=int, default=400_000, help="training frames timed after the warm-up")
    parser.add_argument("--component_seconds", type=float, default=5.0)
    parser.add_argument("--memory_minutes", type=float, default=0.0,
                        help="also sample the learner's resident memory for this long after warm-up")
    parser.add_argument("--gin_bindings", action="append", default=[], help="for both roles (repeatable)")
    parser.add_argument("--timeout_s", type=float, default=3600.0)
    args = parser.parse_args()

    bound = component_bound(args.config, args.actors * args.envs, args.component_seconds)
    emit(benchmark="component_bound", **bound)
    result = run(args.config, args.actors, args.envs, args.warmup_frames, args.frames, args.memory_minutes,
                 args.gin_bindings, args.timeout_s)
    emit(benchmark="end_to_end", config=args.config, actors=args.actors, envs_per_actor=args.envs,
         gin_bindings=args.gin_bindings, **result,
         ratio_to_bound=result["training_frames_per_s"] / bound["frames_per_s"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
