"""Transport overhead: env steps/s through actors + gRPC + batcher + codecs, over raw stepping.

    .venv/bin/python benchmarks/transport.py [--actors 4] [--envs 4 16 24 32] [--rounds 12] [--seconds 3]
                                             [--settle_seconds 1.5] [--warmup_seconds 5] [--env_groups 1]
                                             [--gin_bindings BINDING]...

For each `--envs` value: grpcio's own floor, a bare stream exchanging messages
of one actor's size (benchmarks/grpc_floor.py); then three groups of processes
with the same layout: `raw`, `--actors` processes each stepping that many Pong
envs on their own (the reference); `grpc_only`, the same envs in real actors of
a server that answers each message at once in its gRPC handler and does nothing
else (grpc_floor.AnsweringLearner: what the actors and grpcio cost without the
learner's work); and `transport`, real actors of the learner itself answering
with a fixed action, neither inferring nor training
(training.agent = @FixedActionAgent), whose batcher, slot table and codecs
come on top (once per `--env_groups` value; 1: lockstep actors, 2:
double-buffered). `ceiling_ratio` turns the floor into the best ratio any
transport on grpcio could reach here: raw stepping's CPU per message / (that +
the floor's CPU per message).

The groups take turns: all start, then only one runs at a time while the others
are stopped (SIGSTOP): each group once for `--warmup_seconds`, untimed, then
`--rounds` rounds of a `--seconds` window each (after `--settle_seconds`), and
every ratio is over the raw rate of its own round, measured seconds apart.
This host's speed drifts by more than 10 % within minutes, so measurements taken
one after the other, with minutes of process start-up between them, compared
host speeds as much as transports. A `transport_summary` line gives the
medians over the rounds, the ratio of mean rates, and the mean per-round ratio
with its standard error. Prints JSON lines; the ratios are what to compare
across machines.
"""
import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, REPO)
import grpc_floor  # noqa: E402  (benchmarks/, this script's own folder)

from tests import processes  # noqa: E402

# Steps until killed, adding its env steps to the int64 in the file argv[3] after every step.
RAW_STEPPER = """
import sys, numpy as np
import actors.actor
from seed import gin_setup, envs as seed_envs
gin_setup.parse([sys.argv[1]], sys.argv[4:], skip_unknown=True)
envs = seed_envs.create_envs(int(sys.argv[2]))
steps = np.memmap(sys.argv[3], np.int64, "r+", shape=(1,))
envs.reset(seed=0)
actions = np.zeros(envs.num_envs, np.int64)  # the same fixed action the transport learner answers
print("ready", envs.spec.observation_nbytes, flush=True)
while True:
    envs.step(actions)
    steps[0] += envs.num_envs
"""

Sample = tuple[float, float]  # (env steps so far, time in seconds)


class Group:
    """Processes that run together; `count` samples their env steps so far."""

    def __init__(self, name: str, procs: list[subprocess.Popen], count: Callable[[], Sample], close: Callable):
        self.name, self.procs, self.count, self._close = name, procs, count, close

    def signal(self, signum: int) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signum)
        if signum == signal.SIGSTOP:  # returns once every process is stopped
            for p in self.procs:
                processes.wait_until(lambda p=p: p.poll() is not None or _state(p.pid) in "Tt", timeout_s=10,
                                     what=f"{self.name} process {p.pid} stopped", poll_s=0.01)

    def close(self) -> None:
        self.signal(signal.SIGCONT)  # a stopped process would not see SIGTERM
        self._close()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def _check_running(group: Group) -> None:
    dead = [p.pid for p in group.procs if p.poll() is not None]
    if dead:
        raise RuntimeError(f"{group.name}: process {dead[0]} exited during the benchmark")


def start_raw(config: str, actors: int, envs: int, workdir: str, bindings=()) -> tuple[Group, int]:
    """The raw steppers, and one observation's size in bytes."""
    env = dict(os.environ, PYTHONPATH=REPO)
    counters = []
    for i in range(actors):
        path = os.path.join(workdir, f"raw_steps_{i}")
        np.zeros(1, np.int64).tofile(path)
        counters.append(path)
    procs = [subprocess.Popen([sys.executable, "-c", RAW_STEPPER, config, str(envs), path, *bindings],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, env=env)
             for path in counters]
    views = [np.memmap(path, np.int64, "r", shape=(1,)) for path in counters]

    def count() -> Sample:
        return float(sum(int(v[0]) for v in views)), time.monotonic()

    group = Group("raw", procs, count, lambda: processes.stop(procs))
    ready = [p.stdout.readline().split() for p in procs]
    if any(not line or line[0] != "ready" for line in ready):
        group.close()
        raise RuntimeError("a raw env stepper failed to start; see its error above")
    return group, int(ready[0][1])


def _actor_bindings(envs: int, groups: int, bindings=()):
    return [f"run_actor.num_envs={envs}", f"run_actor.num_env_groups={groups}", *bindings]


def start_grpc_only(config: str, actors: int, envs: int, groups: int, workdir: str, bindings=()) -> Group:
    logdir = tempfile.mkdtemp(prefix="grpc_only_", dir=workdir)
    learner = grpc_floor.AnsweringLearner()
    procs = []

    def close():
        processes.stop(procs)
        learner.close()

    try:
        procs += processes.start_actors(logdir, config, learner.address, actors,
                                        _actor_bindings(envs, groups, bindings))
        processes.wait_until(lambda: learner.env_steps()[1] == actors, what="every grpc_only actor stepping")
    except BaseException:
        close()
        raise

    def count() -> Sample:
        steps, _, when = learner.env_steps()
        return steps, when

    return Group("grpc_only", [learner.process, *procs], count, close)


def start_system(config: str, actors: int, envs: int, groups: int, workdir: str, bindings=(),
                 progress_interval_s: float = 0.5) -> Group:
    logdir = tempfile.mkdtemp(prefix="transport_", dir=workdir)
    learner = processes.start_learner(logdir, config, ["training.agent=@FixedActionAgent",
                                                       f"reporting.progress_interval_s={progress_interval_s}",
                                                       *bindings])
    procs = [learner]
    frames_per_step = 4 if "atari" in config else 1

    def count() -> Sample:
        # The learner's newest progress record: written while it ran, so steps and time agree.
        record = processes.last_progress(logdir)
        return record["env_frames"] / frames_per_step, record["time"]

    def all_stepping():
        record = processes.last_progress(logdir)
        return record.get("actors/connected") == actors and record.get("env_frames", 0) > 0

    try:
        address = processes.wait_for_address(logdir, learner)
        procs += processes.start_actors(logdir, config, address, actors, _actor_bindings(envs, groups, bindings))
        processes.wait_until(all_stepping, what="every actor of the learner stepping")
    except BaseException:
        processes.stop(procs)
        raise
    return Group("transport", procs, count, lambda: processes.stop(procs))


def window_rate(group: Group, seconds: float, settle_s: float) -> float:
    """Env steps/s of `group` running alone for `seconds`, after `settle_s` to get going."""
    group.signal(signal.SIGCONT)
    try:
        time.sleep(settle_s)  # a benchmark's fixed window, not a synchronisation
        steps0, t0 = group.count()
        time.sleep(seconds)
        steps1, t1 = group.count()
    finally:
        group.signal(signal.SIGSTOP)
    _check_running(group)
    if t1 <= t0:
        raise RuntimeError(f"{group.name}: no new count within {seconds} s; raise --seconds")
    return (steps1 - steps0) / (t1 - t0)


def measure(args: argparse.Namespace, envs: int) -> None:
    """Every measurement for `envs` envs per actor, printed as JSON lines."""
    with tempfile.TemporaryDirectory(prefix="seed_transport_") as workdir, contextlib.ExitStack() as running:
        raw, observation_bytes = start_raw(args.config, args.actors, envs, workdir, args.gin_bindings)
        running.callback(raw.close)
        raw.signal(signal.SIGSTOP)
        floor = grpc_floor.measure(envs * observation_bytes)  # with every other group stopped
        learners = []
        for groups in args.env_groups:
            for start in (start_grpc_only, start_system):
                group = start(args.config, args.actors, envs, groups, workdir, args.gin_bindings)
                running.callback(group.close)
                group.signal(signal.SIGSTOP)
                learners.append((groups, group))
        for group in [raw] + [group for _, group in learners]:
            window_rate(group, args.warmup_seconds, 0.0)  # not counted: caches, connections, JIT of numpy paths
        rates = {}  # (group name, env_groups) -> env steps/s per round
        turns = [("raw", 0, raw)] + [(group.name, groups, group) for groups, group in learners]
        for round_ in range(args.rounds):
            # Each round starts with another group, so none is always the one measured first.
            for name, groups, group in turns[round_ % len(turns):] + turns[:round_ % len(turns)]:
                rates.setdefault((name, groups), []).append(window_rate(group, args.seconds, args.settle_seconds))
            raw_rate = rates[("raw", 0)][-1]
            print(json.dumps({"benchmark": "raw_env_stepping", "actors": args.actors, "envs_per_actor": envs,
                              "round": round_, "agent_steps_per_s": raw_rate}), flush=True)
            if round_ == 0:
                # Raw stepping keeps min(actors, cores) cores busy; this is its CPU per actor message.
                raw_cpu_ms = 1000 * min(args.actors, os.cpu_count()) / raw_rate * envs
                floor_ms = floor["client_cpu_ms"] + floor["server_cpu_ms"]
                print(json.dumps({"benchmark": "grpc_floor", "envs_per_actor": envs, **floor,
                                  "raw_cpu_ms_per_message": raw_cpu_ms,
                                  "ceiling_ratio": raw_cpu_ms / (raw_cpu_ms + floor_ms)}), flush=True)
            for name, groups, _ in turns[1:]:
                rate = rates[(name, groups)][-1]
                record = {"benchmark": name, "actors": args.actors, "envs_per_actor": envs,
                          "env_groups": groups, "round": round_, "agent_steps_per_s": rate,
                          "ratio_to_raw": rate / raw_rate}
                if name == "transport":
                    record["ratio_to_grpc_only"] = rate / rates[("grpc_only", groups)][-1]
                print(json.dumps(record), flush=True)
        for groups in args.env_groups:
            print(json.dumps({"benchmark": "transport_summary", "actors": args.actors, "envs_per_actor": envs,
                              "env_groups": groups, "rounds": args.rounds,
                              **transport_summary(rates[("raw", 0)], rates[("grpc_only", groups)],
                                                  rates[("transport", groups)])}), flush=True)


def transport_summary(raw: list[float], grpc_only: list[float], transport: list[float]) -> dict:
    """Statistics over the rounds of one env-group setting, from each group's env steps/s per round."""
    ratios = [t / r for t, r in zip(transport, raw)]
    return {"raw_agent_steps_per_s_median": statistics.median(raw),
            "ratio_to_raw_median": statistics.median(ratios),
            "ratio_of_means": statistics.mean(transport) / statistics.mean(raw),
            "ratio_to_raw_mean": statistics.mean(ratios),
            # How far the mean of the per-round ratios may be off (one standard error):
            # what tells a run's figure from the host's noise.
            "ratio_to_raw_sem": statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else None,
            "ratio_to_raw_min": min(ratios), "ratio_to_raw_max": max(ratios),
            "grpc_only_ratio_to_raw_median": statistics.median(g / r for g, r in zip(grpc_only, raw))}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="atari_vtrace.gin")
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--envs", type=int, nargs="+", default=[4, 16, 24, 32], help="envs per actor, one run each")
    parser.add_argument("--rounds", type=int, default=12, help="turns of every group; a ratio per round")
    parser.add_argument("--seconds", type=float, default=3.0, help="each group's timed window per round")
    parser.add_argument("--settle_seconds", type=float, default=1.5,
                        help="each group runs this long after being resumed before its window opens")
    parser.add_argument("--warmup_seconds", type=float, default=5.0,
                        help="every group runs this long, untimed, before the first round")
    parser.add_argument("--env_groups", type=int, nargs="+", default=[1])
    parser.add_argument("--gin_bindings", action="append", default=[],
                        help="for the raw steppers, actors and learner, e.g. 'create_atari_envs.num_threads=2'")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.seconds <= 0 or args.settle_seconds < 0 or args.warmup_seconds <= 0:
        parser.error("--seconds and --warmup_seconds must be positive, --settle_seconds not negative")
    for envs in args.envs:
        measure(args, envs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
