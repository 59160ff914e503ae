"""Transport overhead: env steps/s through actors + gRPC + batcher + codecs, over raw stepping.

    .venv/bin/python benchmarks/transport.py [--actors 4] [--envs 4 16 24 32] [--seconds 20] [--env_groups 1]
                                             [--repeats 1] [--gin_bindings BINDING]...

For each `--envs` value, all measured in this run, one after the other, with
the same process layout: `--actors` processes each stepping that many Pong envs
on their own (reference); grpcio's own floor, a bare stream exchanging messages
of one actor's size (benchmarks/grpc_floor.py), turned into the best ratio any
transport on grpcio could reach here (`ceiling_ratio` = raw stepping's CPU per
message / (that + the floor's CPU per message)); then, once per `--env_groups`
value (1: lockstep actors; 2: double-buffered), the same processes as real
actors of two learners: `grpc_only`, a server that answers each message at once
in its gRPC handler and does nothing else (grpc_floor.AnsweringLearner: what
the actors and grpcio cost without the learner's work), and `transport`, the
learner itself answering with a fixed action, neither inferring nor training
(run_learner.agent = @FixedActionAgent), whose batcher, slot table and codecs
come on top. With `--repeats N` all but the floor runs N rounds in turn, each
ratio over the raw rate of its own round, and a `transport_summary` line gives
the medians: where the host's speed drifts within minutes, one pair of
measurements can be off by more than the effect measured. Prints JSON lines;
the ratios are what to compare across machines.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, REPO)
import grpc_floor  # noqa: E402  (benchmarks/, this script's own folder)
from tests import processes  # noqa: E402

RAW_STEPPER = """
import sys, time, numpy as np
import actors.actor
from seed import gin_setup, envs as seed_envs
gin_setup.parse([sys.argv[1]], sys.argv[3:], skip=gin_setup.LEARNER_CONFIGURABLES)
envs = seed_envs.create_envs(int(sys.argv[2]))
envs.reset(seed=0)
rng = np.random.default_rng(0)
n = envs.num_envs
for _ in range(20):
    envs.step(rng.integers(0, envs.spec.num_actions, n))
print("ready", envs.spec.observation_nbytes, flush=True)
start, end = map(float, sys.stdin.readline().split())  # one window for all steppers (monotonic clock)
steps, first, last = 0, None, None  # steps after the window's first one, between `first` and `last`
while True:
    envs.step(np.zeros(n, np.int64))  # the same fixed action the transport learner answers
    now = time.monotonic()
    if now > end:
        break
    if now < start:
        continue
    if first is None:
        first = now
    else:
        steps, last = steps + n, now
if last is None:
    sys.exit("the window is too short for two steps: raise --seconds")
print(steps / (last - first))
"""


def raw_steps_per_s(config: str, actors: int, envs: int, seconds: float, bindings=()):
    """Agent steps/s of all processes together, and one observation's size in bytes.

    Every process counts its steps in one shared window that opens after all
    have started, so none is timed while others are still starting or done
    (which would give it more than its share of the cores)."""
    env = dict(os.environ, PYTHONPATH=REPO)
    procs = [subprocess.Popen([sys.executable, "-c", RAW_STEPPER, config, str(envs), *bindings],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(actors)]
    try:
        ready = [p.stdout.readline().split() for p in procs]
        if any(not line or line[0] != "ready" for line in ready):
            raise RuntimeError("a raw env stepper failed to start; see its error above")
        start = time.monotonic() + 1.0  # every stepper is stepping again by then
        for p in procs:
            p.stdin.write(f"{start} {start + seconds}\n")
            p.stdin.flush()
        outputs = [p.communicate()[0] for p in procs]
        if any(p.returncode != 0 for p in procs):
            raise RuntimeError("a raw env stepper failed; see its error above")
        rates = [float(out.strip().splitlines()[-1]) for out in outputs]
    finally:
        processes.stop(procs)
    return sum(rates), int(ready[0][1])


def _actor_bindings(envs: int, groups: int, bindings=()):
    return [f"run_actor.num_envs={envs}", f"run_actor.num_env_groups={groups}", *bindings]


def grpc_only_steps_per_s(config: str, actors: int, envs: int, groups: int, seconds: float, bindings=(),
                          warmup_s: float = 5.0) -> float:
    logdir = tempfile.mkdtemp(prefix="seed_transport_")
    learner = grpc_floor.AnsweringLearner()
    running = []
    try:
        running += processes.start_actors(logdir, config, learner.address, actors,
                                          _actor_bindings(envs, groups, bindings))
        processes.wait_until(lambda: learner.env_steps()[1] == actors, what="every actor stepping")
        time.sleep(warmup_s)  # a benchmark's fixed warm-up and window, not a synchronisation
        start_steps, _, start = learner.env_steps()
        time.sleep(seconds)
        end_steps, _, end = learner.env_steps()
    finally:
        processes.stop(running)
        learner.close()
    return (end_steps - start_steps) / (end - start)


def system_steps_per_s(config: str, actors: int, envs: int, groups: int, seconds: float, bindings=(),
                       warmup_s: float = 5.0) -> float:
    logdir = tempfile.mkdtemp(prefix="seed_transport_")
    learner = processes.start_learner(logdir, config, ["run_learner.agent=@FixedActionAgent",
                                                       "run_learner.progress_interval_s=1", *bindings])
    running = [learner]
    try:
        address = processes.wait_for_address(logdir, learner)
        running += processes.start_actors(logdir, config, address, actors, _actor_bindings(envs, groups, bindings))

        def all_stepping():
            record = processes.last_progress(logdir)
            return record.get("actors/connected") == actors and record.get("env_frames", 0) > 0

        processes.wait_until(all_stepping, what="every actor stepping")
        connected = time.time()
        time.sleep(warmup_s + seconds + 2)  # a benchmark's fixed warm-up and window, not a synchronisation
        records = [json.loads(line) for line in open(os.path.join(logdir, "progress.jsonl"))]
    finally:
        processes.stop(running)
    start = next(r for r in records if r["time"] >= connected + warmup_s)
    end = records[-1]
    frames_per_step = 4 if "atari" in config else 1
    return (end["env_frames"] - start["env_frames"]) / frames_per_step / (end["time"] - start["time"])


def _median(values):
    return float(statistics.median(values))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="atari_vtrace.gin")
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--envs", type=int, nargs="+", default=[4, 16, 24, 32], help="envs per actor, one run each")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup_seconds", type=float, default=5.0,
                        help="after every actor is stepping, before a learner's window opens")
    parser.add_argument("--env_groups", type=int, nargs="+", default=[1])
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of raw stepping, then the learners, per --envs value; each ratio takes the "
                             "raw rate of its own round, and a summary line gives the medians")
    parser.add_argument("--gin_bindings", action="append", default=[],
                        help="for the raw steppers, actors and learner, e.g. 'create_atari_envs.num_threads=2'")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    for envs in args.envs:
        ratios = {}  # (benchmark, env_groups) -> ratio_to_raw of every round
        for repeat in range(args.repeats):
            raw, observation_bytes = raw_steps_per_s(args.config, args.actors, envs, args.seconds,
                                                     args.gin_bindings)
            print(json.dumps({"benchmark": "raw_env_stepping", "actors": args.actors, "envs_per_actor": envs,
                              "repeat": repeat, "agent_steps_per_s": raw}), flush=True)
            if repeat == 0:
                floor = grpc_floor.measure(envs * observation_bytes)
                # Raw stepping keeps min(actors, cores) cores busy; this is its CPU per actor message.
                raw_cpu_ms = 1000 * min(args.actors, os.cpu_count()) / raw * envs
                floor_ms = floor["client_cpu_ms"] + floor["server_cpu_ms"]
                print(json.dumps({"benchmark": "grpc_floor", "envs_per_actor": envs, **floor,
                                  "raw_cpu_ms_per_message": raw_cpu_ms,
                                  "ceiling_ratio": raw_cpu_ms / (raw_cpu_ms + floor_ms)}), flush=True)
            for groups in args.env_groups:
                # The learner first: its ratio is the one the target is about, so it runs next to the raw rate.
                system = system_steps_per_s(args.config, args.actors, envs, groups, args.seconds,
                                            args.gin_bindings, args.warmup_seconds)
                grpc_only = grpc_only_steps_per_s(args.config, args.actors, envs, groups, args.seconds,
                                                  args.gin_bindings, args.warmup_seconds)
                common = {"actors": args.actors, "envs_per_actor": envs, "env_groups": groups, "repeat": repeat}
                print(json.dumps({"benchmark": "grpc_only", **common, "agent_steps_per_s": grpc_only,
                                  "ratio_to_raw": grpc_only / raw}), flush=True)
                print(json.dumps({"benchmark": "transport", **common, "agent_steps_per_s": system,
                                  "ratio_to_raw": system / raw, "ratio_to_grpc_only": system / grpc_only}),
                      flush=True)
                ratios.setdefault(("grpc_only", groups), []).append(grpc_only / raw)
                ratios.setdefault(("transport", groups), []).append(system / raw)
        if args.repeats > 1:
            for groups in args.env_groups:
                transport, grpc_only = ratios[("transport", groups)], ratios[("grpc_only", groups)]
                print(json.dumps({"benchmark": "transport_summary", "actors": args.actors, "envs_per_actor": envs,
                                  "env_groups": groups, "repeats": args.repeats,
                                  "ratio_to_raw_median": _median(transport), "ratio_to_raw_min": min(transport),
                                  "ratio_to_raw_max": max(transport),
                                  "grpc_only_ratio_to_raw_median": _median(grpc_only)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
