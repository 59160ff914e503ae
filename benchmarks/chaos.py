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

With `--network_faults` the learner replica and two actor replicas run on three hosts of a virtual
network (network namespaces on a bridge, `tests/network_hosts.py`; needs root, iproute2 and nftables):
actor host 1 loses `--loss_percent` of its packets each way throughout, and every
`--partition_every_s` a host's link is cut silently (no FIN, no RST) for `--partition_s`, longer than
the keepalive bound, actor host 1 and the learner's host in turn. `partitions` says for each cut how
many actor streams the learner had before it (a cut waits, kills paused, until every actor is
streaming), after how many seconds it had dropped the cut host's (for the learner's host: all of
them), and how long after the link returned it had as many again. Kills wait while a cut is on.

Every `--sample_every_s` it also samples the learner process's resident memory, open file
descriptors and threads (from /proc); a sample counts once that learner process has run for
`--warmup_s`, and `resources` gives each quantity's range over the counted samples and its growth
within a learner process (the median of its last third of samples over that of its first), with
`flat` true where every growth is within 10 %. A leak shows as growth, so an hour's soak kills the
learner rarely (`--learner_kill_every_s 1500`): each process lives long enough to show one.
"""
import argparse
import contextlib
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
from tests.network_hosts import Hosts, loss_unavailable, unavailable  # noqa: E402
from tests.processes import free_loopback_port  # noqa: E402


def cluster_spec(task_type: str, learner: str, actors: list[str], index: int = 0) -> str:
    return json.dumps({"cluster": {"workerpool0": [learner], "workerpool1": actors}, "environment": "cloud",
                       "task": {"type": task_type, "index": index, "trial": ""}})


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
    """Each quantity over the samples taken after their process's warm-up: its range, its spread
    ((max - min) / median), and its growth: for each learner process with 6 or more such samples, the
    median of its last third over the median of its first third, less 1; the largest in size is given.
    `flat` is every growth within 10 %: a leak grows with a process's age, while the open descriptors and
    threads also move with the actor streams connected at a sample, which the thirds' medians even out."""
    counted = [s for s in samples if s["age_s"] >= warmup_s]
    by_process = {}
    for sample in counted:
        by_process.setdefault(sample["pid"], []).append(sample)
    summary = {"samples": len(counted), "processes_with_growth": sum(len(p) >= 6 for p in by_process.values())}

    def median(values):
        values = sorted(values)
        return values[len(values) // 2]
    for key in ("rss_mb", "fds", "threads"):
        values = sorted(s[key] for s in counted)
        if not values:
            continue
        middle = median(values)
        growths = []
        for process in by_process.values():
            if len(process) >= 6:
                third = len(process) // 3
                first, last = median(s[key] for s in process[:third]), median(s[key] for s in process[-third:])
                growths.append(round(last / first - 1, 3) if first else None)
        summary[key] = {"min": values[0], "median": middle, "max": values[-1],
                        "spread": round((values[-1] - values[0]) / middle, 3) if middle else None,
                        "growth": max(growths, key=lambda g: abs(g) if g is not None else float("inf"))
                        if growths else None}
    grown = [summary[k]["growth"] for k in ("rss_mb", "fds", "threads") if k in summary]
    summary["flat"] = bool(grown) and all(g is not None and abs(g) <= 0.10 for g in grown)
    return summary


class LinkCuts:
    """Every `every_s` cuts one host's link for `length_s`, `targets` in turn, and records for each cut what
    the learner saw: its actor streams before, when it had dropped the cut ones, when it had them back."""

    def __init__(self, hosts: Hosts, targets: list[str], every_s: float, length_s: float, actors_per_host: int,
                 start: float):
        self.hosts, self.targets, self.every_s, self.length_s = hosts, targets, every_s, length_s
        self.actors_per_host = actors_per_host
        self.next_at, self.current, self.records = start + every_s, None, []

    @property
    def busy(self) -> bool:
        """A cut is due, on, or not yet healed: kills wait meanwhile, so each cut's figures are its own."""
        return self.current is not None

    def step(self, now: float, started: float, connected: int | None, streams: int) -> None:
        """`connected`: the learner's actor streams now; `streams`: how many it has with every actor up."""
        cut = self.current
        if cut is None:
            if now >= self.next_at:
                # Wait (kills paused, at most a cut's interval) for every stream, so the drop is the cut's.
                self.current = {"_pending": now}
            return
        if "_pending" in cut:
            if (connected or 0) >= streams or now - cut["_pending"] > self.every_s:
                host = self.targets[len(self.records) % len(self.targets)]
                self.hosts.set_link(host, up=False)
                self.current = cut = {"host": host, "at_s": round(now - started, 1), "cut_for_s": self.length_s,
                                      "connected_before": connected or 0, "dropped_after_s": None,
                                      "back_after_s": None, "_at": now}
                self.records.append(cut)
            return
        # The learner drops every stream when its own host is cut, the cut host's otherwise.
        expected = 0 if cut["host"] == "learner" else cut["connected_before"] - self.actors_per_host
        if "_healed" not in cut:
            if cut["dropped_after_s"] is None and connected is not None and connected <= expected:
                cut["dropped_after_s"] = round(now - cut["_at"], 1)
            if now - cut["_at"] >= self.length_s:
                self.hosts.set_link(cut["host"], up=True)
                cut["_healed"] = now
        elif connected is not None and connected >= cut["connected_before"]:
            cut["back_after_s"] = round(now - cut["_healed"], 1)
            self.finish(now)
        elif now - cut["_healed"] > self.every_s:  # bounded: it is recorded as not back (None)
            self.finish(now)

    def finish(self, now: float) -> None:
        if self.current is not None:
            if "_at" in self.current and "_healed" not in self.current:
                self.hosts.set_link(self.current["host"], up=True)
            for key in ("_at", "_healed", "_pending"):
                self.current.pop(key, None)
            self.current, self.next_at = None, now + self.every_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--config", default="atari_vtrace.gin")
    parser.add_argument("--actors", type=int, default=4, help="actor processes (per actor host with --network_faults)")
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
    parser.add_argument("--network_faults", action="store_true",
                        help="three hosts on a virtual network, with loss and link cuts (needs root and nftables)")
    parser.add_argument("--loss_percent", type=float, default=2.0, help="actor host 1's packet loss, each way")
    parser.add_argument("--partition_every_s", type=float, default=300.0, help="between the ends of link cuts")
    parser.add_argument("--partition_s", type=float, default=60.0,
                        help="a link cut's length: longer than keepalive + its timeout, to be noticed")
    parser.add_argument("--keepalive_s", type=float, default=None,
                        help="service.keepalive_s and run_actor.keepalive_s (default: the configs' own)")
    parser.add_argument("--keepalive_timeout_s", type=float, default=None,
                        help="service.keepalive_timeout_s and run_actor.keepalive_timeout_s (default: the "
                             "configs' own)")
    args = parser.parse_args()
    if args.minutes <= 0 or args.actors < 1 or args.envs < 1:
        parser.error("--minutes, --actors and --envs must be positive")
    if args.actor_kill_every_s + args.idle_timeout_s + 10 >= args.learner_kill_every_s:
        parser.error("the SIGSTOP (from --actor_kill_every_s for --idle_timeout_s + 10 s) must end before the first "
                     "learner kill: raise --learner_kill_every_s or lower --idle_timeout_s")
    if args.network_faults:
        reason = unavailable() or loss_unavailable()
        if reason:
            parser.error(f"--network_faults: {reason}")
        if not 0 <= args.loss_percent < 100 or args.partition_s <= 0:
            parser.error("--loss_percent must be in [0, 100) and --partition_s positive")
        if args.partition_every_s <= args.actor_kill_every_s + args.idle_timeout_s + 10:
            parser.error("the first link cut must come after the SIGSTOP has ended: raise --partition_every_s")
    with contextlib.ExitStack() as stack:
        hosts = stack.enter_context(Hosts(("learner", "actor0", "actor1"))) if args.network_faults else None
        return soak(args, hosts)


def soak(args, hosts: Hosts | None) -> int:
    rng = random.Random(args.seed)
    logdir = args.logdir or os.path.join("/tmp", f"seed_chaos_{int(time.time())}")
    os.makedirs(logdir, exist_ok=True)
    if hosts:
        learner_address = f"{hosts.address('learner')}:{free_loopback_port()}"
        actor_addresses = [f"{hosts.address(f'actor{i}')}:2222" for i in range(2)]
        listen_host = hosts.address("learner")
    else:
        learner_address, actor_addresses = f"127.0.0.1:{free_loopback_port()}", [f"127.0.0.1:{free_loopback_port()}"]
        listen_host = "127.0.0.1"
    bindings = [f"training.checkpoint_interval_s={args.checkpoint_interval_s}",
                f"service.actor_idle_timeout_s={args.idle_timeout_s}", "reporting.progress_interval_s=1",
                f"run_actor.num_envs={args.envs}", "run_actor.reconnect_timeout_s=600",
                "run_actor.max_backoff_s=2"]
    for name, value in (("keepalive_s", args.keepalive_s), ("keepalive_timeout_s", args.keepalive_timeout_s)):
        if value is not None:
            bindings += [f"service.{name}={value}", f"run_actor.{name}={value}"]
    common = [sys.executable, "-m", "seed.launchers.launch", "--logdir", logdir, "--listen_host", listen_host,
              "--gin_config", args.config] + [a for b in bindings for a in ("--gin_bindings", b)]
    # Off loopback the learner asks for a token, as a run across machines would.
    env = dict(os.environ, SEED_AUTH_TOKEN="chaos-secret") if hosts else dict(os.environ)

    def launch(command, role, index=0):
        spec = cluster_spec(role, learner_address, actor_addresses, index)
        host = "learner" if role == "workerpool0" else f"actor{index}"
        return subprocess.Popen(hosts.command(host, command) if hosts else command, cwd=REPO, stdout=out, stderr=out,
                                env=dict(env, CLUSTER_SPEC=spec))

    with open(os.path.join(logdir, "chaos_launch.log"), "ab") as out:
        learner = launch(common + ["--max_learner_restarts", "1000"], "workerpool0")
        replicas = [launch(common + ["--actors_per_replica", str(args.actors)], "workerpool1", i)
                    for i in range(len(actor_addresses))]
    if hosts:
        hosts.set_loss("actor1", args.loss_percent)
    kills, actor_kills, stopped, cuts = [], 0, None, None
    samples, sampled, next_sample = [], {}, 0.0  # sampled: learner pid -> when it was first seen
    started = time.monotonic()
    try:
        while "loss/total" not in (progress(logdir) or [{}])[-1]:  # training has begun
            if (time.monotonic() - started > 300 or learner.poll() is not None
                    or any(r.poll() is not None for r in replicas)):
                raise SystemExit(f"chaos.py: the run did not start training; see {logdir}/logs")
            time.sleep(1)
        started = time.monotonic()
        deadline = started + 60 * args.minutes
        next_actor_kill = started + args.actor_kill_every_s
        next_learner_kill = started + args.learner_kill_every_s
        # One long SIGSTOP, early and over before the first learner kill: a learner restart would end
        # the stopped actor's stream itself, and the idle timeout would have nothing to close.
        stop_at = started + args.actor_kill_every_s
        if hosts:
            cuts = LinkCuts(hosts, ["actor1", "learner"], args.partition_every_s, args.partition_s, args.actors,
                            started)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = time.monotonic()
            pids = [p for r in replicas for p in children(r.pid)]
            if cuts:
                cuts.step(now, started, ((progress(logdir) or [{}])[-1]).get("actors/connected"),
                          args.actors * len(replicas))
            quiet = bool(cuts and cuts.busy)  # kills wait while a link cut is measured
            if stopped is None and now >= stop_at and pids:
                stopped = (rng.choice(pids), now + args.idle_timeout_s + 10)
                os.kill(stopped[0], signal.SIGSTOP)
            elif stopped and stopped[1] and now >= stopped[1]:
                os.kill(stopped[0], signal.SIGCONT)
                stopped = (stopped[0], 0)
            if now >= next_actor_kill and not quiet:
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
            if now >= next_learner_kill and children(learner.pid) and not quiet:
                next_learner_kill = now + args.learner_kill_every_s
                records = progress(logdir)
                kills.append({"at_s": round(now - started, 1), "unix_time": time.time(),
                              "frames_trained": records[-1].get("frames"),
                              "checkpoint_frames": latest_checkpoint_frames(logdir)})
                os.kill(children(learner.pid)[0], signal.SIGKILL)
        if cuts and cuts.current and "_at" in cuts.current:
            cuts.current["cut_short_by_the_end"] = True
        if cuts:
            cuts.finish(time.monotonic())
        # A kill near the end is only a test once the run is back: wait (bounded) for an episode
        # reported after it, however slowly a loaded machine restarts the learner.
        recovery_deadline = time.monotonic() + args.recovery_timeout_s
        while kills and time.monotonic() < recovery_deadline and not episodes_since(logdir, kills[-1]["unix_time"]):
            time.sleep(1)
    finally:
        if cuts:
            cuts.finish(time.monotonic())
        if stopped and stopped[1]:
            os.kill(stopped[0], signal.SIGCONT)
        packets_dropped = hosts.dropped("actor1") if hosts else 0
        for p in (*replicas, learner):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes = [p.wait(120) for p in (*replicas, learner)]

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
    actor_restarts = sum(open(os.path.join(logdir, "logs", f"launch_actors_{i}.log")).read().count("restarting it")
                         for i in range(len(replicas)))
    network = {"network_faults": bool(hosts)}
    if hosts:
        network.update({"actor_hosts": len(replicas), "loss_percent": args.loss_percent,
                        "packets_dropped": packets_dropped, "partitions": cuts.records if cuts else []})
    print(json.dumps({
        "benchmark": "chaos", "config": args.config, "minutes": args.minutes, "actors": args.actors * len(replicas),
        "envs_per_actor": args.envs, **network, "actor_kills": actor_kills, "learner_kills": len(kills),
        "learner_restarts": launch_log.count("restarting it"), "actor_restarts": actor_restarts,
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
