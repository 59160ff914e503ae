"""What each V-trace replay mix costs in throughput: the real system (run_local.sh, the same learner
and actor processes over gRPC) for a fixed wall time per mix, one mix after another in one
invocation, each reported beside the fresh-only default measured in the same invocation.

    .venv/bin/python benchmarks/replay_mixes.py --seconds 150 --out benchmarks/results/replay_mixes.json
    .venv/bin/python benchmarks/replay_mixes.py --mixes default elite_lowest --seconds 60

Per mix it prints one JSON line: the median environment frames/s stepped and the median updates/s
over the progress records after `--warmup_s` (the first update included), their ratio to the
default's, the median KL(mu || pi) of the replayed steps (how far the policy has moved since it
acted them; also per `--kl_bin_updates` updates from the start, where mixes compare at equal training),
and the last record's per-source metrics (share, age in updates, importance ratio pi/mu,
elite's and attentive's distance). Learning curves are benchmarks/learning.py's job; this only
says what a mix costs per frame and per update on this machine. `--learning_runs` prints instead
one line of learning.py arguments per mix (label `mix_GAME_MIX`), for gpu_offline/learn.sh's
RUNS=FILE or a loop here:

    .venv/bin/python benchmarks/replay_mixes.py --learning_runs --game Breakout --mixes uniform elite_strata > mixes.runs
"""
import argparse
import contextlib
import json
import os
import shlex
import statistics
import sys
import time
from types import SimpleNamespace
from typing import Dict, Optional

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
from learning import default_game, train  # noqa: E402  (one run_local.sh run, stopped as Ctrl-C stops it)

HALF = "VTraceAgent.sources={'queue': 0.5, '%s': 0.5}"
# Name -> bindings. Half fresh, half replayed, as LASER's and elite replay's examples run them.
MIXES = {
    "default": [],
    "uniform": [HALF % "uniform"],
    "prioritised": [HALF % "prioritised"],
    "elite_lowest": [HALF % "elite", "EliteSampler.strategy='lowest'"],
    "elite_strata": [HALF % "elite", "EliteSampler.strategy='strata'"],
    "elite_lowest_least_sampled": [HALF % "elite", "EliteSampler.strategy='lowest_least_sampled'"],
    "elite_strata_least_sampled": [HALF % "elite", "EliteSampler.strategy='strata_least_sampled'"],
    "attentive": [HALF % "attentive"],
    "clear": [HALF % "uniform", "VTraceLoss.policy_cloning_cost=0.01", "VTraceLoss.value_cloning_cost=0.005"],
}


def replayed_kl(record: dict) -> Optional[float]:
    """How far the policy has moved from a record's replayed data: CLEAR's cloning term is KL(mu || pi)
    on the replayed steps averaged over all steps, so divided by the replayed share it is the replayed
    steps' own mean KL; None with fresh data only (no such term)."""
    replayed = 1.0 - record.get("data/share_queue", 0.0)
    return record["loss/policy_cloning"] / replayed if "loss/policy_cloning" in record and replayed > 0 else None


def summarise(logdir: str, warmup_s: float, kl_bin_updates: int = 50) -> dict:
    with open(os.path.join(logdir, "progress.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    trained = [r for r in records if r.get("updates", 0) > 0]
    if len(trained) < 3:
        raise RuntimeError(f"{logdir}: fewer than 3 progress records after the first update; raise --seconds")
    start = trained[0]["time"] + warmup_s
    steady = [r for r in trained if r["time"] >= start]
    if len(steady) < 2:  # a short or slow run: its last records, warm or not
        steady = trained[-3:]
    env_rates, update_rates = [], []
    for before, after in zip(steady, steady[1:]):
        seconds = after["time"] - before["time"]
        env_rates.append((after["env_frames"] - before["env_frames"]) / seconds)
        update_rates.append((after["updates"] - before["updates"]) / seconds)
    last = steady[-1]
    kls = [kl for kl in map(replayed_kl, steady) if kl is not None]
    # The KL grows as training sharpens the policy, so mixes that made different numbers of updates in
    # the same wall time compare only at the same updates: its median per bin of updates, from the start.
    bins: Dict[int, list] = {}
    for r in trained:
        kl = replayed_kl(r)
        if kl is not None:
            bins.setdefault(r["updates"] // kl_bin_updates * kl_bin_updates, []).append(kl)
    return {"env_frames_per_s": round(statistics.median(env_rates)),
            "updates_per_s": round(statistics.median(update_rates), 3),
            "replayed_kl_mu_pi": round(statistics.median(kls), 6) if kls else None,
            "replayed_kl_by_updates": {str(b): round(statistics.median(v), 6) for b, v in sorted(bins.items())},
            "records": len(steady),
            "source_metrics": {k: round(v, 4) for k, v in last.items() if k.startswith("data/")}}


def _shell_word(word: str) -> str:
    """shlex.quote's meaning, in double quotes where that needs no escapes: the bindings stay readable."""
    if word == shlex.quote(word) or any(c in word for c in '"$`\\!'):
        return shlex.quote(word)
    return f'"{word}"'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="atari")
    parser.add_argument("--game", default=None, help="default: the config's GAME (Pong)")
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--envs", type=int, default=4, help="envs per actor")
    parser.add_argument("--mixes", nargs="+", default=list(MIXES), choices=list(MIXES))
    parser.add_argument("--seconds", type=float, default=150, help="wall time per mix")
    parser.add_argument("--warmup_s", type=float, default=30, help="after the first update, not counted")
    parser.add_argument("--kl_bin_updates", type=int, default=50,
                        help="updates per bin of the replayed data's KL reported over the run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gin_bindings", action="append", default=[], help="for every mix (repeatable)")
    parser.add_argument("--logdir", default=os.path.join(REPO, "runs", "replay_mixes"))
    parser.add_argument("--out", help="also write the results as JSON here")
    parser.add_argument("--learning_runs", action="store_true",
                        help="print one line of learning.py arguments per mix (--seed, --game, --gin_bindings "
                             "included) and exit")
    args = parser.parse_args()
    if args.learning_runs:
        game = args.game or default_game(args.env, "vtrace") or args.env
        for name in args.mixes:
            words = ["--seeds", str(args.seed), "--label", f"mix_{game.lower()}_{name}"]
            words += ["--game", args.game] if args.game else []
            for binding in MIXES[name] + args.gin_bindings:
                words += ["--gin_bindings", binding]
            print(" ".join(_shell_word(w) for w in words))
        return 0
    if args.kl_bin_updates < 1:
        parser.error("--kl_bin_updates must be positive")
    if args.seconds <= args.warmup_s:
        parser.error(f"--seconds ({args.seconds:g}) must exceed --warmup_s ({args.warmup_s:g})")
    mixes = ["default"] + [m for m in args.mixes if m != "default"]  # the reference comes first
    results = {}
    for name in mixes:
        run = SimpleNamespace(env=args.env, agent="vtrace", actors=args.actors, envs=args.envs, game=args.game,
                              gin_config=[], gin_bindings=MIXES[name] + args.gin_bindings, frames=10 ** 12, timeout_s=args.seconds,
                              report_interval_s=10 ** 9, window=100)
        logdir = os.path.join(args.logdir, f"{name}_{time.strftime('%Y%m%d_%H%M%S')}")
        os.makedirs(args.logdir, exist_ok=True)
        with contextlib.redirect_stdout(sys.stderr):  # stdout holds only the results' JSON lines
            train(run, args.seed, logdir)
        result = {"mix": name, "bindings": MIXES[name], **summarise(logdir, args.warmup_s, args.kl_bin_updates)}
        reference = results.get("default", result)
        result["env_frames_ratio_to_default"] = round(result["env_frames_per_s"] / reference["env_frames_per_s"], 3)
        result["updates_ratio_to_default"] = round(result["updates_per_s"] / reference["updates_per_s"], 3)
        results[name] = result
        print(json.dumps(result), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"env": args.env, "game": args.game, "actors": args.actors, "envs": args.envs,
                       "seconds": args.seconds, "results": list(results.values())}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
