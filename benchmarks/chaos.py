"""A soak of repeated faults on a real V-trace run: what is lost, and whether it goes on.

    .venv/bin/python benchmarks/chaos.py --minutes 10     # benchmarks/experiments/2026-11-24-chaos-soak.md
    .venv/bin/python benchmarks/chaos.py --minutes 1 --config classic_vtrace.gin --learner_kill_every_s 25

Runs the cluster entry point as a job would (`seed-launch` for a learner replica and one actor
replica of `--actors` actor processes, over loopback), and while it trains: SIGKILLs a random actor
process every `--actor_kill_every_s`, SIGKILLs the learner process every `--learner_kill_every_s`
(seed-launch restarts both, the learner from its latest checkpoint), and once, early, SIGSTOPs an
actor for longer than the learner's idle timeout, then lets it go on. Prints one JSON line: learner and actor
restarts, streams lost and closed as idle, environment frames stepped and frames trained, for each
learner kill the frames trained before it, the frames it resumed at and the checkpoint's frames at
the kill (a resume must start at that checkpoint: at most the frames since it are lost), whether the
run ended with a readable checkpoint, and whether episodes kept coming after the last kill.

Every `--sample_every_s` it also samples the learner process's resident memory, open file
descriptors and threads (from /proc); a sample counts once that learner process has run for
`--warmup_s`, and `resources` gives each quantity's spread over the counted samples, (max - min) /
median, with `flat` true where every spread is within 10 %: a leak shows as a spread that grows
with the soak's length.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, REPO)
from benchmarks.end_to_end import read_jsonl  # noqa: E402
from tests.processes import free_loopback_port  # noqa: E402


def cluster_spec(task_type: str, learner: str, actor: str) -> str:
    return json.dumps({"cluster": {"workerpool0": [learner], "workerpool1": [actor]}, "environment": "cloud",
                       "task": {"type": task_type, "index": 0, "trial": ""}})


def children(pid: int) -> list[int]:
    """Live child processes (a killed one stays a zombie until its parent notices; it does not count)."""
    path = f"/proc/{pid}/task/{pid}/children"
    pids = [int(c) for c in open(path).read().split()] if os.path.exists(path) else []
    return [p for p in pids if running(p)]


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def progress(logdir: str) -> list[dict]:
    return read_jsonl(os.path.join(logdir, "progress.jsonl"))


def latest_checkpoint_frames(logdir: str):
    try:
        with open(os.path.join(logdir, "checkpoints", "latest.json")) as f:
            return json.load(f)["environment_frames"]
    except (OSError, ValueError, KeyError):
        return None


def resumes(logdir: str) -> list[int]:
    path = os.path.join(logdir, "logs", "learner.log")
    text = open(path).read() if os.path.exists(path) else ""
    return [int(part.split()[0]) for part in text.split("resuming at ")[1:]]


def read_episode_rows(logdir: str):
    path = os.path.join(logdir, "episodes.csv")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.split(",") for line in f.read().splitlines()[1:]]


def episodes_since(logdir: str, unix_time: float) -> int:
    """Episodes whose rows were written after `unix_time` (the time column, the sixth)."""
    return sum(len(e) > 5 and e[5] and float(e[5]) > unix_time for e in read_episode_rows(logdir))


def process_resources(pid: int) -> dict | None:
    """Resident memory (MB), open file descriptors and threads of a live process; None once it is gone."""
    try:
        status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":" in line)
        return {"rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1), "threads": int(status["Threads"]),
                "fds": len(os.listdir(f"/proc/{pid}/fd"))}
    except (OSError, KeyError, ValueError):
        return None


def resources_summary(samples: list[dict], warmup_s: float) -> dict:
    """Each quantity's spread over the samples taken after their process's warm-up."""
    counted = [s for s in samples if s["age_s"] >= warmup_s]
    summary = {"samples": len(counted)}
    for key in ("rss_mb", "fds", "threads"):
        values = sorted(s[key] for s in counted)
        if values:
            median = values[len(values) // 2]
            summary[key] = {"min": values[0], "median": median, "max": values[-1],
                            "spread": round((values[-1] - values[0]) / median, 3) if median else None}
    spreads = [summary[k]["spread"] for k in ("rss_mb", "fds", "threads") if k in summary]
    summary["flat"] = bool(spreads) and all(s is not None and s <= 0.10 for s in spreads)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--config", default="atari_vtrace.gin")
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--envs", type=int, default=4, help="envs per actor")
    parser.add_argument("--actor_kill_every_s", type=float, default=5.0)
    parser.add_argument("--learner_kill_every_s", type=float, default=120.0)
    parser.add_argument("--recovery_timeout_s", type=float, default=180.0,
                        help="after the last minute, how long to wait for the run to report an episode "
                             "after the last learner kill")
    parser.add_argument("--idle_timeout_s", type=float, default=20.0, help="service.actor_idle_timeout_s")
    parser.add_argument("--checkpoint_interval_s", type=float, default=60.0)
    parser.add_argument("--logdir", default=None, help="default: a new directory under /tmp")
    parser.add_argument("--seed", type=int, default=0, help="which faults, when")
    parser.add_argument("--sample_every_s", type=float, default=60.0,
                        help="how often the learner's memory, descriptors and threads are sampled")
    parser.add_argument("--warmup_s", type=float, default=60.0,
                        help="a learner process's samples count from this long after its start")
    args = parser.parse_args()
    if args.minutes <= 0 or args.actors < 1 or args.envs < 1:
        parser.error("--minutes, --actors and --envs must be positive")
    if args.actor_kill_every_s + args.idle_timeout_s + 10 >= args.learner_kill_every_s:
        parser.error("the SIGSTOP (from --actor_kill_every_s for --idle_timeout_s + 10 s) must end before the first "
                     "learner kill: raise --learner_kill_every_s or lower --idle_timeout_s")
    rng = random.Random(args.seed)
    logdir = args.logdir or os.path.join("/tmp", f"seed_chaos_{int(time.time())}")
    os.makedirs(logdir, exist_ok=True)
    learner_address, actor_address = f"127.0.0.1:{free_loopback_port()}", f"127.0.0.1:{free_loopback_port()}"
    bindings = [f"training.checkpoint_interval_s={args.checkpoint_interval_s}",
                f"service.actor_idle_timeout_s={args.idle_timeout_s}", "reporting.progress_interval_s=1",
                f"run_actor.num_envs={args.envs}", "run_actor.reconnect_timeout_s=600",
                "run_actor.max_backoff_s=2"]
    common = [sys.executable, "-m", "seed.launchers.launch", "--logdir", logdir, "--listen_host", "127.0.0.1",
              "--gin_config", args.config] + [a for b in bindings for a in ("--gin_bindings", b)]
    with open(os.path.join(logdir, "chaos_launch.log"), "ab") as out:
        learner = subprocess.Popen(common + ["--max_learner_restarts", "1000"], cwd=REPO, stdout=out, stderr=out,
                                   env=dict(os.environ, CLUSTER_SPEC=cluster_spec("workerpool0", learner_address,
                                                                                  actor_address)))
        actors = subprocess.Popen(common + ["--actors_per_replica", str(args.actors)], cwd=REPO, stdout=out,
                                  stderr=out, env=dict(os.environ, CLUSTER_SPEC=cluster_spec(
                                      "workerpool1", learner_address, actor_address)))
    kills, actor_kills, stopped = [], 0, None
    samples, sampled, next_sample = [], {}, 0.0  # sampled: learner pid -> when it was first seen
    started = time.monotonic()
    try:
        while "loss/total" not in (progress(logdir) or [{}])[-1]:  # training has begun
            if time.monotonic() - started > 300 or learner.poll() is not None or actors.poll() is not None:
                raise SystemExit(f"chaos.py: the run did not start training; see {logdir}/logs")
            time.sleep(1)
        started = time.monotonic()
        deadline = started + 60 * args.minutes
        next_actor_kill = started + args.actor_kill_every_s
        next_learner_kill = started + args.learner_kill_every_s
        # One long SIGSTOP, early and over before the first learner kill: a learner restart would end
        # the stopped actor's stream itself, and the idle timeout would have nothing to close.
        stop_at = started + args.actor_kill_every_s
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = time.monotonic()
            pids = children(actors.pid)
            if stopped is None and now >= stop_at and pids:
                stopped = (rng.choice(pids), now + args.idle_timeout_s + 10)
                os.kill(stopped[0], signal.SIGSTOP)
            elif stopped and stopped[1] and now >= stopped[1]:
                os.kill(stopped[0], signal.SIGCONT)
                stopped = (stopped[0], 0)
            if now >= next_actor_kill:
                next_actor_kill = now + args.actor_kill_every_s
                candidates = [p for p in pids if not (stopped and p == stopped[0] and stopped[1])]
                if candidates:
                    os.kill(rng.choice(candidates), signal.SIGKILL)
                    actor_kills += 1
            if now >= next_sample and children(learner.pid):
                next_sample = now + args.sample_every_s
                pid = children(learner.pid)[0]
                born = sampled.setdefault(pid, now)
                sample = process_resources(pid)
                if sample:
                    samples.append({"at_s": round(now - started, 1), "pid": pid, "age_s": round(now - born, 1),
                                    **sample})
            if now >= next_learner_kill and children(learner.pid):
                next_learner_kill = now + args.learner_kill_every_s
                records = progress(logdir)
                kills.append({"at_s": round(now - started, 1), "unix_time": time.time(),
                              "frames_trained": records[-1].get("frames"),
                              "checkpoint_frames": latest_checkpoint_frames(logdir)})
                os.kill(children(learner.pid)[0], signal.SIGKILL)
        # A kill near the end is only a test once the run is back: wait (bounded) for an episode
        # reported after it, however slowly a loaded machine restarts the learner.
        recovery_deadline = time.monotonic() + args.recovery_timeout_s
        while kills and time.monotonic() < recovery_deadline and not episodes_since(logdir, kills[-1]["unix_time"]):
            time.sleep(1)
    finally:
        if stopped and stopped[1]:
            os.kill(stopped[0], signal.SIGCONT)
        for p in (actors, learner):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes = [p.wait(120) for p in (actors, learner)]

    resumed_at = resumes(logdir)
    for kill, resumed in zip(kills, resumed_at[-len(kills):] if kills else []):
        kill["resumed_at"] = resumed
        kill["frames_lost"] = (kill["frames_trained"] or 0) - resumed
        kill["lost_at_most_since_checkpoint"] = resumed >= (kill["checkpoint_frames"] or 0)
    records = progress(logdir)
    # Counters restart with each learner process: sum each process's last value. A new process
    # shows as a counter or the trained frames going down.
    counters = ("frames", "actors/streams_lost", "actors/idle_streams_closed")
    segments, last = [], None
    for r in records:
        if last is not None and any(r.get(k, 0) < last.get(k, 0) for k in counters):
            segments.append(last)
        last = r
    segments += [last] if last else []
    episodes = read_episode_rows(logdir)
    last_kill_time = kills[-1]["unix_time"] if kills else 0
    try:
        import tensorflow as tf
        readable = bool(tf.train.load_checkpoint(os.path.join(logdir, "checkpoints")))
    except Exception:  # noqa: BLE001  (any failure to read it is the answer)
        readable = False
    launch_log = open(os.path.join(logdir, "logs", "launch_learner.log")).read()
    actors_log = open(os.path.join(logdir, "logs", "launch_actors_0.log")).read()
    print(json.dumps({
        "benchmark": "chaos", "config": args.config, "minutes": args.minutes, "actors": args.actors,
        "envs_per_actor": args.envs, "actor_kills": actor_kills, "learner_kills": len(kills),
        "learner_restarts": launch_log.count("restarting it"), "actor_restarts": actors_log.count("restarting it"),
        "actor_sigstopped_s": args.idle_timeout_s + 10 if stopped else 0,
        "streams_lost": sum(s.get("actors/streams_lost", 0) for s in segments),
        "idle_streams_closed": sum(s.get("actors/idle_streams_closed", 0) for s in segments),
        "env_frames_stepped": records[-1].get("env_frames") if records else 0,
        "frames_trained": records[-1].get("frames") if records else 0,
        "kills": kills, "readable_checkpoint": readable,
        "resources": resources_summary(samples, args.warmup_s), "resource_samples": samples,
        "episodes": len(episodes),
        "episodes_after_last_kill": episodes_since(logdir, last_kill_time),
        "exit_codes": codes, "logdir": logdir}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
