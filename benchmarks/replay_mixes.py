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

    .venv/bin/python benchmarks/replay_mixes.py --learning_runs --game Breakout \\
        --mixes uniform elite_strata > mixes.runs

`--table GAME` prints the learning runs' results so far as one Markdown table, read from the curves
learning.py committed (OUT/mix_GAME_MIX_seedN_episodes_curve.csv, and the fresh-only default's runs
named in DEFAULT_RUNS): per run the frames at which the 100-episode mean first reached the game's
threshold, the mean at 2.5M, 5M and 10M frames (other columns with `--marks 1M 4M 10M`), where it
stopped, and the mix's frames/s as a share of the default's from the `--throughput` files (this
script's `--out` JSON); a mix with two or more seeds gets a row more that sums them up:

    .venv/bin/python benchmarks/replay_mixes.py --table Pong \\
        --throughput benchmarks/results/replay_mixes_2026-11-2*.json
"""
import argparse
import contextlib
import csv
import glob
import json
import os
import shlex
import statistics
import sys
import time
from types import SimpleNamespace

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
from learning import THRESHOLDS, default_game, return_at, summarize, train  # noqa: E402  (one run_local.sh run, stopped as Ctrl-C stops it)

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


# The fresh-only default's committed learning runs at today's Atari settings, the rows each mix is read
# against: run K (2 epochs x 8 minibatches, entropy 0.005) on Pong, run L (a lost life terminal) on Breakout.
DEFAULT_RUNS = {"Pong": "pong_K", "Breakout": "breakout_L"}
TABLE_MARKS = ("2.5M", "5M", "10M")


def frames_mark(text: str) -> float:
    """'2.5M' or '300k' as environment frames."""
    scale = {"k": 1e3, "M": 1e6}.get(text[-1:])
    try:
        return float(text[:-1]) * scale if scale else float(text)
    except ValueError:
        raise ValueError(f"--marks {text}: not a frame count; write it as 2.5M, 300k or 2500000") from None


def _millions(frames: float | None) -> str:
    return "-" if frames is None else f"{frames / 1e6:.2f}M"


def _seeds_row(mix: str, runs: list[dict], marks) -> str:
    """One mix's seeds in one row: the median frames to the threshold with its range over the seeds that
    reached it (and how many did, where not all), the mean return at each mark and at the last episode."""
    reached = sorted(r["first"] for r in runs if r["first"] is not None)
    first = ", ".join(([f"{_millions(statistics.median(reached))} ({reached[0] / 1e6:.2f}-{reached[-1] / 1e6:.2f}M)"]
                       if reached else [])
                      + ([f"{len(reached)} of {len(runs)} reached"] if len(reached) < len(runs) else []))
    means = []
    for i in range(len(marks)):
        values = [r["at"][i] for r in runs]
        means.append("-" if None in values else f"{statistics.mean(values):.1f}")
    last = statistics.mean(r["last"] for r in runs)
    return f"| {mix} | {len(runs)} seeds: median, mean | {first} | " + " | ".join(means) + f" | {last:.1f} | |"


def learning_table(game: str, curves_dir: str, throughput_files: list[str], window: int = 100,
                   marks=TABLE_MARKS) -> list[str]:
    """The Markdown rows of --table: one per committed run of GAME, the default's first, then the
    mixes in MIXES' order and by seed, and after a mix's seeds (two or more) one row that sums them up;
    a mix's frames/s share is from the first throughput file that measured it on GAME, else on another
    game, named. The return at a mark is the 100-episode mean as it stood there (learning.py's rule)."""
    ratios: dict[str, str] = {}
    for path in throughput_files:
        with open(path) as f:
            measured = json.load(f)
        measured_on = measured.get("game") or default_game(measured.get("env", "atari"), "vtrace")
        for result in measured["results"]:
            # Measured on the other game it still says what the mix costs, but it is named.
            ratio = (f"{result['env_frames_ratio_to_default']:.2f}"
                     + ("" if measured_on == game else f" ({measured_on})"))
            if result["mix"] not in ratios or ratios[result["mix"]].endswith(")") and measured_on == game:
                ratios[result["mix"]] = ratio
    labels = [("default", DEFAULT_RUNS.get(game))] + [(m, f"mix_{game.lower()}_{m}") for m in MIXES if m != "default"]
    threshold = THRESHOLDS.get(game)
    lines = [f"| mix | run | {threshold:+g} first at | " + " | ".join(f"at {m}" for m in marks)
             + " | last (frames) | frames/s vs default |", "|---" * (5 + len(marks)) + "|"]
    for mix, label in labels:
        runs = []
        for path in sorted(glob.glob(os.path.join(curves_dir, f"{label}_seed*_episodes_curve.csv"))) if label else []:
            with open(path) as f:
                rows = [(int(r[0]), float(r[1]), float(r[2])) for r in list(csv.reader(f))[1:]]
            if not rows:
                continue
            s = summarize(rows, threshold, window)
            at = [return_at(rows, frames_mark(m)) for m in marks]
            runs.append({"first": s["frames_to_threshold"], "at": at, "last": s["final_return"]})
            lines.append(f"| {mix} | {os.path.basename(path)[: -len('_episodes_curve.csv')]} | "
                         f"{_millions(s['frames_to_threshold'])} | "
                         + " | ".join("-" if v is None else f"{v:.1f}" for v in at)
                         + f" | {s['final_return']:.1f} ({_millions(s['final_frames'])}) | {ratios.get(mix) or '-'} |")
        if len(runs) > 1:
            lines.append(_seeds_row(mix, runs, marks))
    return lines


def replayed_kl(record: dict) -> float | None:
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
    bins: dict[int, list] = {}
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
    parser.add_argument("--table", metavar="GAME", help="print the committed learning runs of GAME (Pong, "
                        "Breakout) as a Markdown table and exit")
    parser.add_argument("--curves_dir", default=os.path.join(REPO, "benchmarks", "results", "learning"),
                        help="where --table reads the runs' *_episodes_curve.csv")
    parser.add_argument("--throughput", nargs="*", default=[], metavar="JSON",
                        help="--out files of earlier invocations, for --table's frames/s column")
    parser.add_argument("--marks", nargs="+", default=list(TABLE_MARKS), metavar="FRAMES",
                        help="--table's columns: the mean return at these frame counts (2.5M, 300k)")
    args = parser.parse_args()
    if args.table:
        if args.table not in THRESHOLDS:
            parser.error(f"--table {args.table}: no threshold known for it; give one of {', '.join(DEFAULT_RUNS)}")
        missing = [p for p in args.throughput if not os.path.isfile(p)]
        if missing:
            parser.error(f"--throughput: no file {', '.join(missing)}")
        try:
            [frames_mark(m) for m in args.marks]
        except ValueError as e:
            parser.error(str(e))
        print("\n".join(learning_table(args.table, args.curves_dir, args.throughput, marks=args.marks)))
        return 0
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
                              gin_config=[], gin_bindings=MIXES[name] + args.gin_bindings, frames=10 ** 12,
                              timeout_s=args.seconds, report_interval_s=10 ** 9, window=100)
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
