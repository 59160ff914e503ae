"""Many actors for real: one process opens `--streams` streams against one learner on loopback, each
on a connection of its own, and speaks the wire protocol with synthetic observations (no emulator),
so that the learner, not the actors, is what is loaded.

    .venv/bin/python benchmarks/load.py --streams 16 64 256 [--envs 1] [--seconds 10]
                                        [--config classic_vtrace.gin] [--gin_bindings BINDING]...

For each stream count a fresh learner (the config's agent and network, inference batches up to
`inference.batch_size`; the learner's `service.max_actors` and `inference.max_env_slots` are raised
to the stream count unless bound) serves the streams for `--seconds`: each stream says hello, then
sends steps of random observations of the env's spec and waits for the answer. A stream is
`answered` (it stepped to the end of the window), `refused` (the learner said RESOURCE_EXHAUSTED, as
it does beyond its limits), `hung` (an answer still missing 10 s after the window's end; a correct
learner has none) or `failed` (any other end). One JSON line per count:
the streams of each kind, env steps/s, the round trip's p50 and p99 in ms, and the learner's mean
inference batch over the window (its progress records). Bounded: every stream ends by the deadline.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import grpc
import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, REPO)
from actors.actor import LearnerStream, StreamClosed  # noqa: E402
from seed import codec, gin_setup, handshake  # noqa: E402
from seed.envs import env_spec  # noqa: E402

# An answer that has not come this long after the window's end counts the stream as hung.
HANG_S = 10.0


class SyntheticActor(threading.Thread):
    """One stream of `num_envs` synthetic envs stepping until `deadline`: its outcome, round trips (s)
    and when its last answer came. The call's own deadline is HANG_S later: a stream still waiting
    then is hung."""

    def __init__(self, index: int, address: str, spec, num_envs: int, deadline: float):
        super().__init__(daemon=True)
        self.index, self.address, self.spec, self.num_envs, self.deadline = index, address, spec, num_envs, deadline
        self.outcome, self.round_trips, self.steps, self.last_answer = "hung", [], 0, None

    def run(self) -> None:
        # A connection per stream, as separate actor processes would have (not one shared subchannel).
        channel = grpc.insecure_channel(self.address, options=[("grpc.use_local_subchannel_pool", 1)])
        rng = np.random.default_rng(self.index)
        stream = LearnerStream(channel, threading.Event(), timeout_s=self.deadline + HANG_S - time.monotonic())
        shape = (self.num_envs, *self.spec.observation_shape)
        zeros, flags = np.zeros(self.num_envs, np.float32), np.zeros(self.num_envs, bool)
        try:
            stream.exchange(handshake.make_hello(f"load_{self.index}", self.num_envs, self.spec))  # the welcome
            while time.monotonic() < self.deadline:
                observations = (rng.integers(0, 256, shape) if self.spec.observation_dtype == "uint8"
                                else rng.standard_normal(shape)).astype(self.spec.observation_dtype)
                sent = time.perf_counter()
                stream.exchange(codec.encode_steps(observations, zeros, flags, flags))
                self.round_trips.append(time.perf_counter() - sent)
                self.last_answer = time.monotonic()
                self.steps += self.num_envs
            self.outcome = "answered"
        except StreamClosed:
            self.outcome = "closed by the learner"
        except grpc.RpcError as e:
            self.outcome = {grpc.StatusCode.RESOURCE_EXHAUSTED: "refused",
                            grpc.StatusCode.DEADLINE_EXCEEDED: "hung"}.get(e.code(), f"failed: {e.code().name}")
        finally:
            stream.close()
            channel.close()


def run_count(args, spec, streams: int) -> dict:
    with tempfile.TemporaryDirectory() as logdir:
        command = [sys.executable, "-m", "learner", "--logdir", logdir, "--address", "127.0.0.1:0",
                   "--gin_config", args.config, "--gin_bindings", "reporting.progress_interval_s=1",
                   "--gin_bindings", f"service.max_actors={streams}",
                   "--gin_bindings", f"inference.max_env_slots={max(streams * args.envs, 1)}"]
        for binding in args.gin_bindings:
            command += ["--gin_bindings", binding]
        env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")
        learner = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            address_file = os.path.join(logdir, "learner_address")
            started = time.monotonic()
            while not os.path.exists(address_file):
                if learner.poll() is not None or time.monotonic() - started > 120:
                    raise RuntimeError(f"the learner did not start ({args.config}, {streams} streams)")
                time.sleep(0.2)
            with open(address_file) as f:
                address = f.read().strip()
            started = time.monotonic()
            deadline = started + args.seconds
            actors = [SyntheticActor(i, address, spec, args.envs, deadline) for i in range(streams)]
            for actor in actors:
                actor.start()
            for actor in actors:
                actor.join(max(0.0, deadline - time.monotonic()) + HANG_S + 5.0)
            records = read_progress(logdir)
        finally:
            learner.terminate()
            try:
                learner.wait(30)
            except subprocess.TimeoutExpired:
                learner.kill()
                learner.wait()
    outcomes = [a.outcome for a in actors]
    trips = sorted(t for a in actors for t in a.round_trips)
    serving = [r["inference_batch_size"] for r in records if r.get("actors/connected", 0) > 0]
    return {"benchmark": "load", "config": args.config, "streams": streams, "envs_per_stream": args.envs,
            "answered": outcomes.count("answered"), "refused": outcomes.count("refused"),
            "hung": outcomes.count("hung"), "failed": sum(o.startswith(("failed", "closed")) for o in outcomes),
            "env_steps_per_s": sum(a.steps for a in actors) / max(
                max((a.last_answer for a in actors if a.last_answer), default=deadline) - started, 1e-9),
            "round_trip_ms_p50": 1000 * trips[len(trips) // 2] if trips else None,
            "round_trip_ms_p99": 1000 * trips[min(len(trips) - 1, int(0.99 * len(trips)))] if trips else None,
            "inference_batch_mean": statistics.fmean(serving) if serving else None}


def read_progress(logdir: str) -> list[dict]:
    path = os.path.join(logdir, "progress.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--envs", type=int, default=1, help="synthetic envs per stream")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each count runs")
    parser.add_argument("--config", default="classic_vtrace.gin")
    parser.add_argument("--gin_bindings", action="append", default=[], help="for the learner (repeatable)")
    args = parser.parse_args()
    if min(args.streams) < 1 or args.envs < 1 or args.seconds < 2:
        parser.error("--streams and --envs must be positive and --seconds at least 2")
    gin_setup.parse([args.config], args.gin_bindings, skip_unknown=True)
    spec = env_spec()
    for streams in args.streams:
        print(json.dumps(run_count(args, spec, streams)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
