"""Packet loss between hosts, measured side by side: frames/s of an actor on a lossy link beside one on a
clean link, on one learner.

    sudo .venv/bin/python benchmarks/link_loss.py --loss_percent 0 2 10 --seconds 60

Builds three network-namespace hosts on a bridge (`tests/network_hosts.py`: needs root, iproute2 and
nftables), trains CartPole V-trace (classic_vtrace.gin) with the learner on one, actor 0 on a clean link
and actor 1 on a link that drops each `--loss_percent` in turn (of the packets its host sends and, apart,
of those it receives) for `--seconds` each. Prints one JSON line per loss: each actor's env steps/s and
its round trip's p50 and p99 (means over its reports in the window), the lossy actor's steps/s as a
ratio to the clean one's, the packets dropped, and the learner's env frames/s, inference batch and
streams lost. The clean actor is the control: a ratio near 1 at 0 % says the two hosts are alike.
"""
import argparse
import json
import os
import statistics
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, REPO)
from tests.network_hosts import Hosts, actor_reports, loss_unavailable, start_training, unavailable  # noqa: E402
from tests.processes import last_progress, stop, wait_until  # noqa: E402


def actor_summary(reports: list[dict]) -> dict:
    def mean(key):
        values = [r[key] for r in reports if key in r]
        return round(statistics.fmean(values), 2) if values else None
    return {"reports": len(reports), "env_steps_per_s": mean("env_steps_per_s"),
            "round_trip_ms_p50": mean("round_trip_ms_p50"), "round_trip_ms_p99": mean("round_trip_ms_p99")}


def measure(losses: list[float], seconds: float, warmup_s: float, logdir: str) -> list[dict]:
    lines = []
    with Hosts(("learner", "actor0", "actor1")) as hosts:
        running, _ = start_training(hosts, logdir, actor_bindings=["run_actor.progress_interval_s=1"])
        learner_dir = os.path.join(logdir, "learner")
        try:
            wait_until(lambda: "loss/total" in last_progress(learner_dir)
                       and last_progress(learner_dir).get("actors/connected") == 2, 180, "training with both actors")
            for loss in losses:
                hosts.set_loss("actor1", loss)
                dropped_before = hosts.dropped("actor1")  # 0: a new rule's counters start at 0
                time.sleep(warmup_s)  # let the rates settle on the new link
                first, since = last_progress(learner_dir), time.time()
                time.sleep(seconds)
                last = last_progress(learner_dir)
                clean, lossy = (actor_summary(actor_reports(logdir, i, since)) for i in (0, 1))
                elapsed = last["time"] - first["time"]
                ratio = (lossy["env_steps_per_s"] / clean["env_steps_per_s"]
                         if lossy["env_steps_per_s"] and clean["env_steps_per_s"] else None)
                lines.append({
                    "benchmark": "link_loss", "loss_percent": loss, "seconds": round(elapsed, 1),
                    "clean_actor": clean, "lossy_actor": lossy,
                    "lossy_to_clean_steps_ratio": round(ratio, 3) if ratio else None,
                    "packets_dropped": hosts.dropped("actor1") - dropped_before,
                    "learner_env_frames_per_s": round((last["env_frames"] - first["env_frames"]) / elapsed, 1),
                    "inference_batch_size": last.get("inference_batch_size"),
                    "actors_connected": last.get("actors/connected"),
                    "streams_lost": last.get("actors/streams_lost", 0)})
                print(json.dumps(lines[-1]), flush=True)
        finally:
            hosts.set_loss("actor1", 0)
            stop(running)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loss_percent", type=float, nargs="+", default=[0.0, 2.0],
                        help="the lossy link's loss in each window, in turn")
    parser.add_argument("--seconds", type=float, default=60.0, help="each window's length")
    parser.add_argument("--warmup_s", type=float, default=5.0, help="unmeasured seconds after each change of loss")
    parser.add_argument("--logdir", default=None, help="default: a new directory under /tmp")
    args = parser.parse_args()
    if any(not 0 <= loss < 100 for loss in args.loss_percent):
        parser.error("--loss_percent values must be in [0, 100)")
    if args.seconds <= 0 or args.warmup_s < 0:
        parser.error("--seconds must be positive and --warmup_s 0 or more")
    reason = unavailable() or loss_unavailable()
    if reason:
        parser.error(f"cannot make lossy hosts here: {reason}")
    logdir = args.logdir or os.path.join("/tmp", f"seed_link_loss_{int(time.time())}")
    measure(args.loss_percent, args.seconds, args.warmup_s, logdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
