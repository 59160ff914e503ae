"""Learning curves of the real system: returns over environment frames and wall time.

    .venv/bin/python benchmarks/learning.py atari vtrace --game Pong --frames 10_000_000 --seeds 1 2 3
    .venv/bin/python benchmarks/learning.py atari vtrace --label lam95 --gin_bindings 'VTraceLoss.lambda_=0.95'
    .venv/bin/python benchmarks/learning.py atari vtrace --suite atari5 --seeds 1 2 3 --label a5 --resume
    .venv/bin/python benchmarks/learning.py --plot runs/Pong_vtrace_A runs/Pong_vtrace_B --out plots
    .venv/bin/python benchmarks/learning.py --plot benchmarks/results/learning/pong_*_episodes.csv --label pong_probes

Each seed is one `./run_local.sh ENV AGENT ACTORS ENVS` run (its launcher, seed.launchers.local: the
same learner and actor processes over gRPC) in OUT/LABEL_seedN, stopped as Ctrl-C stops it once the
environment frames stepped pass `--frames`. Per run it writes, beside its (git-ignored) run directory,
the copies a result commits: OUT/LABEL_seedN_episodes.csv and OUT/LABEL_seedN_segments.json (its episodes and the wall
times of its invocations) and OUT/LABEL_seedN_episodes_curve.csv (environment frames stepped, wall
seconds, mean return over the last `--window` episodes); and for all runs given OUT/LABEL.png with the
public reference points for the game drawn in by `seed-plot`'s drawing (the PNG needs matplotlib:
pip install -e '.[bench]').
Prints one JSON line per run: the mean return at 2.5M, 5M, 10M and 20M frames and the frames and
wall seconds at which it first reached `--threshold` (default: the game's, e.g. +18 for Pong).
`--plot` draws the same from existing run directories (their episodes.csv) or copies of
episodes.csv files, without training; a copy named RUN_episodes.csv takes its wall times from the
RUN_segments.json beside it (a copy of the run's learning_segments.json), as its run directory
would; `--x time` draws them over minutes of training instead of frames (the GPU runs' 5-minute goal).
`--suite atari5` (or a comma-separated list of games) trains the games one after another, each as
`--game` would, with labels LABEL_GAME; with `--resume` an invocation picks up where the last one
stopped, so a suite can be trained over several sessions. For Atari-5 a last JSON line gives each
game's mean return at `--frames` over the seeds, its human-normalised score and the Atari-5 score
(benchmarks/atari5.py).
`--resume` goes on with runs a stopped invocation left (a run stops cleanly on Ctrl-C or
`kill`, at its last checkpoint): the same command plus `--resume` trains each seed's run to
`--frames` from where it stopped, and its wall seconds leave out the time between. Run
directories are git-ignored, so `--resume` works only where they were trained; a seed whose
committed copy has no run directory beside it is refused rather than trained again over it.
"""
import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, REPO)
import atari5  # noqa: E402  (benchmarks/, beside this file)

from seed.launchers.local import config_game  # noqa: E402
from seed.plot import curve, draw, read_episodes  # noqa: E402  (the repository's, also before pip install)

# 300k and 1M for MuJoCo (issue 28), 2.5M-20M for Atari (issue 26).
CHECKPOINT_FRAMES = (300_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 20_000_000)

# The goals the issues set (Pong, Breakout: issue 26; MuJoCo at 1M steps, PPO unless the agent is named:
# issue 28; Football, Procgen at 5M steps and dm_control's SAC at 500k: issue 76, "clearly above 0" read as
# a goal in ten episodes for 3-vs-1), the usual "solved" for CartPole, and -250 for SAC on Pendulum.
THRESHOLDS = {"Pong": 18.0, "Breakout": 100.0, "CartPole-v1": 195.0, "Pendulum-v1": -250.0,
              "HalfCheetah-v5": 3000.0, ("HalfCheetah-v5", "sac"): 9000.0, "Hopper-v5": 2400.0,
              "Walker2d-v5": 3000.0, "academy_empty_goal_close": 0.9, "academy_3_vs_1_with_keeper": 0.1,
              "starpilot": 27.3, "bigfish": 8.4, "cheetah-run": 686.0, "walker-walk": 897.0}


# Named suites for --suite: Atari-5 (Aitchison et al. 2023, benchmarks/atari5.py), issue 77's default check.
SUITES = {"atari5": atari5.GAMES}


def default_game(env: str, agent: str) -> str | None:
    """The GAME macro of seed/configs/ENV_AGENT.gin, which run_local.sh trains without --game."""
    return config_game(os.path.join(REPO, "seed", "configs", f"{env}_{agent}.gin"))


def return_at(rows, frames: float) -> float | None:
    """The mean return of a curve's rows (frames, wall s, mean) as it stood at `frames`: the last mean
    at or before it, or None where the run did not get that far."""
    before = [r for r in rows if r[0] <= frames]
    return round(before[-1][2], 2) if before and rows[-1][0] >= frames else None


def summarize(rows, threshold: float | None, window: int) -> dict:
    """Mean return at the checkpoint frame counts and the first time it reached `threshold`;
    a mean over fewer than `window` episodes does not count as reaching it."""
    at = {f"return_at_{mark / 1e6:g}M": return_at(rows, mark) for mark in CHECKPOINT_FRAMES}
    reached = next((r for i, r in enumerate(rows) if i + 1 >= window and threshold is not None
                    and r[2] >= threshold), None)
    return {**at, "threshold": threshold, "frames_to_threshold": reached[0] if reached else None,
            "wall_s_to_threshold": reached[1] if reached else None,
            "final_frames": rows[-1][0] if rows else 0, "final_return": round(rows[-1][2], 2) if rows else None,
            "episodes": len(rows)}


def write_csv(path: str, rows) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_frames", "wall_s", "mean_return_last_100"])
        writer.writerows(rows)


def write_plot(path: str, curves: dict[str, list], game: str | None, threshold: float | None,
               x: str = "frames") -> None:
    try:
        draw(path, {name: [rows] for name, rows in curves.items()}, x, game, threshold)
    except ImportError:
        print("no PNG: matplotlib is missing (pip install -e '.[bench]')", file=sys.stderr)
        return
    print(f"wrote {path}", file=sys.stderr)


EPISODES_COPY_SUFFIX = "_episodes.csv"


def episodes_copy(logdir: str) -> str:
    """Where copy_out puts a run directory's episodes: the RUN_episodes.csv a result commits."""
    return logdir + EPISODES_COPY_SUFFIX


def segments_path(run: str) -> str:
    """A run directory's segments; for a RUN_episodes.csv copied out of one, the RUN_segments.json
    copied beside it, so that its curve's wall times are the run's own."""
    if run.endswith(EPISODES_COPY_SUFFIX):
        return run[: -len(EPISODES_COPY_SUFFIX)] + "_segments.json"
    return os.path.join(run, "learning_segments.json")


def read_segments(run: str) -> list[list]:
    """[start, end] wall times of each invocation that trained the run (a run directory or a copied
    RUN_episodes.csv); end is None where one was killed before it could write it."""
    try:
        with open(segments_path(run)) as f:
            return json.load(f)
    except OSError:
        return []


def write_segments(logdir: str, segments: list[list]) -> None:
    with open(segments_path(logdir) + ".tmp", "w") as f:
        json.dump(segments, f)
    os.replace(segments_path(logdir) + ".tmp", segments_path(logdir))


def run_name(run: str) -> str:
    """A run directory's name, or a copied RUN_episodes.csv's without the extension."""
    return os.path.splitext(os.path.basename(os.path.normpath(run)))[0]


def checkpoint_summary(logdir: str) -> dict:
    """The run's newest checkpoint summary (learner/checkpoints.py's latest.json); {} without one."""
    try:
        with open(os.path.join(logdir, "checkpoints", "latest.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def copy_out(logdir: str, copy: str | None = None) -> str:
    """Copies a run's episodes and segments out of its run directory (checkpoints, not results) as
    the RUN_episodes.csv and RUN_segments.json a result commits, and returns the copy's path; the
    run directory itself where it has no episodes yet. `copy` names the RUN_episodes.csv to write
    (default: episodes_copy(logdir), beside the run directory; benchmarks/report.py's publish names
    one under benchmarks/results/learning/)."""
    episodes = os.path.join(logdir, "episodes.csv")
    if not os.path.exists(episodes):
        return logdir
    copy = copy or episodes_copy(logdir)
    for source, target in ((episodes, copy), (segments_path(logdir), segments_path(copy))):
        if os.path.exists(source):
            shutil.copyfile(source, target + ".tmp")
            os.replace(target + ".tmp", target)
    return copy


def training_seconds(episodes, segments: list[list]):
    """The episodes with their wall time counted in seconds of training: from the first segment's
    start, leaving out the time between segments (a segment killed without an end ends at its last
    episode). Without segments (runs from before them), times count from the first episode."""
    if not segments:
        return episodes, None
    spans = []
    for i, (start, end) in enumerate(segments):
        if end is None:
            limit = segments[i + 1][0] if i + 1 < len(segments) else float("inf")
            end = max([e[2] for e in episodes if e[2] is not None and start <= e[2] <= limit], default=start)
        spans.append((start, end))

    def clock(when):
        return None if when is None else sum(max(0.0, min(when, end) - start) for start, end in spans)
    return [(frames, ret, clock(when)) for frames, ret, when in episodes], 0.0


def train(args, seed: int, logdir: str) -> None:
    """One run of the local launcher (what ./run_local.sh runs once its .venv exists) until `args.frames`
    environment frames, or on from its checkpoint."""
    resuming = os.path.exists(logdir)
    command = [sys.executable, "-m", "seed.launchers.local", args.env, args.agent, str(args.actors), str(args.envs),
               "--logdir", logdir, "--frames", str(args.frames), "--gin_bindings", f"training.seed={seed}",
               "--gin_bindings", f"run_actor.seed={seed}"] + ([] if resuming else ["--new"])
    if args.game:
        command += ["--game", args.game]
    for config in args.gin_config:
        command += ["--gin_config", config]
    for binding in args.gin_bindings:
        command += ["--gin_bindings", binding]
    existing = read_episodes(logdir) if resuming else []
    if existing and existing[-1][0] >= args.frames:
        return  # trained to --frames already
    started = time.time()
    with open(logdir + ".log", "a" if resuming else "w") as log:
        process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    segments = read_segments(logdir) if resuming else []
    times = [e[2] for e in existing if e[2] is not None]
    if times and not segments:  # a run from before segments were kept
        segments = [[min(times), max(times)]]
    segments.append([started, None])
    last_report, recorded = 0.0, False
    try:
        while process.poll() is None:
            time.sleep(5)
            if not recorded and os.path.isdir(logdir):  # once the launcher has made the run directory
                write_segments(logdir, segments)
                recorded = True
            episodes = read_episodes(logdir)
            frames = episodes[-1][0] if episodes else 0
            if time.time() - last_report >= args.report_interval_s:
                last_report = time.time()
                timed, start = training_seconds(episodes, segments)
                rows = curve(timed, args.window, start)
                print(json.dumps({"run": os.path.basename(logdir), "env_frames": frames,
                                  "wall_s": round(time.time() - started),
                                  "mean_return": round(rows[-1][2], 2) if rows else None}), flush=True)
            if frames >= args.frames or time.time() - started > args.timeout_s:
                break
    finally:  # also on Ctrl-C here: stop the run as `kill` stops run_local.sh (it checkpoints)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if os.path.isdir(logdir):
            segments[-1][1] = time.time()
            write_segments(logdir, segments)
    if process.returncode not in (0, 130) and not read_episodes(logdir):
        raise RuntimeError(f"{logdir} ended with exit code {process.returncode} and no episodes; "
                           f"see {logdir}.log")


def interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    # SIGTERM, and SIGINT even where the shell that started us in the background ignores it, stop
    # the current run as Ctrl-C does (train's `finally`), so `kill PID` loses nothing.
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env", nargs="?", default="atari", help="env family, as for run_local.sh")
    parser.add_argument("agent", nargs="?", default="vtrace")
    parser.add_argument("--game", default=None, help="default: the config's GAME (Pong for atari vtrace)")
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--envs", type=int, default=4, help="envs per actor")
    parser.add_argument("--frames", type=int, default=10_000_000, help="environment frames stepped per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--gin_config", action="append", default=[], help="extra gin file (repeatable)")
    parser.add_argument("--gin_bindings", action="append", default=[], help="for both roles (repeatable)")
    parser.add_argument("--label", default="default", help="names the runs, their CSVs and the PNG")
    parser.add_argument("--out", default=os.path.join(REPO, "runs", "learning"),
                        help="where the run directories and their curves go (publish a result into "
                             "benchmarks/results/ with benchmarks/report.py publish)")
    parser.add_argument("--threshold", type=float, default=None, help="default: the game's (Pong +18)")
    parser.add_argument("--window", type=int, default=100, help="episodes in the mean return")
    parser.add_argument("--timeout_s", type=float, default=6 * 3600, help="stops a run after this long")
    parser.add_argument("--report_interval_s", type=float, default=60.0)
    parser.add_argument("--resume", action="store_true",
                        help="go on with the seeds' runs that exist (from their last checkpoint) to --frames")
    parser.add_argument("--plot", nargs="+", metavar="RUN_DIR_OR_CSV",
                        help="only draw these runs' curves (run directories or episodes.csv files)")
    parser.add_argument("--x", choices=("frames", "time"), default="frames",
                        help="the plot's x axis: env frames, or minutes of training (the invocations' own time)")
    parser.add_argument("--suite", default=None,
                        help=f"train a suite of games one after another, each as --game would: "
                             f"{', '.join(SUITES)} or a comma-separated list; labels become LABEL_GAME, and "
                             f"with --resume an invocation goes on where the last one stopped")
    args = parser.parse_args()
    if args.frames < 1 or args.window < 1 or args.actors < 1 or args.envs < 1:
        parser.error("--frames, --window, --actors and --envs must be positive")
    if args.suite and (args.game or args.plot):
        parser.error("--suite names the games: give it without --game and --plot")
    if args.plot and args.resume:
        parser.error("--resume trains; --plot only draws: give one of them")
    os.makedirs(args.out, exist_ok=True)
    if args.plot:
        missing = [d for d in args.plot
                   if not os.path.isfile(d) and not os.path.exists(os.path.join(d, "episodes.csv"))]
        if missing:
            parser.error(f"no episodes.csv in {', '.join(missing)}")
        report(args, args.game or default_game(args.env, args.agent), args.label,
               [(run_name(d), d) for d in args.plot])
        return 0
    games = SUITES.get(args.suite, [g.strip() for g in args.suite.split(",")]) if args.suite else [args.game]
    if args.suite and (not all(games) or len(set(games)) < len(games)):
        parser.error(f"--suite {args.suite!r}: name a suite ({', '.join(SUITES)}) or distinct games, comma-separated")
    labels = [f"{args.label}_{g}" if args.suite else args.label for g in games]
    for label in labels:  # every refusal before the first run trains
        refuse_existing(parser, args, label)
    finals = {}
    for game, label in zip(games, labels):
        game_args = argparse.Namespace(**{**vars(args), "game": game, "label": label})
        runs, stopped = [], False
        for seed in args.seeds:
            name = f"{label}_seed{seed}"
            logdir = os.path.join(args.out, name)
            runs.append((name, logdir))
            try:
                train(game_args, seed, logdir)
            except KeyboardInterrupt:  # report what was trained, then stop
                stopped = True
                break
        runs = [(name, copy_out(logdir)) for name, logdir in runs]
        finals[game or default_game(args.env, args.agent)] = report(game_args, game or default_game(
            args.env, args.agent), label, runs)
        if stopped:
            break
    if args.suite == "atari5" and set(finals) == set(atari5.GAMES):
        print(json.dumps(atari5_summary(finals, args.frames)), flush=True)
    return 0


def refuse_existing(parser, args, label: str) -> None:
    logdirs = [os.path.join(args.out, f"{label}_seed{s}") for s in args.seeds]
    taken = [d for d in logdirs if os.path.exists(d)]
    if taken and not args.resume:
        parser.error(f"{', '.join(taken)} already exist(s): give another --label or --out, or "
                     "--resume to go on with them (--plot draws existing runs)")
    # A committed copy without its run directory is a run whose checkpoints are gone (a new
    # machine or clone): training again from 0 would overwrite that result under the same name.
    orphaned = [episodes_copy(d) for d in logdirs if os.path.exists(episodes_copy(d)) and not os.path.exists(d)]
    if orphaned:
        parser.error(f"{', '.join(orphaned)} hold(s) a run whose run directory (the checkpoints --resume "
                     "needs) is missing: give another --label or --out, or move the copies aside to "
                     "train that seed again from 0")


def report(args, game: str, label: str, runs) -> dict[str, float | None]:
    """Writes each run's curve, prints its JSON line and draws LABEL.png; returns each run's mean return
    at --frames (None where it did not get there)."""
    threshold = args.threshold if args.threshold is not None else THRESHOLDS.get(
        (game, args.agent), THRESHOLDS.get(game))
    curves, finals = {}, {}
    for name, logdir in runs:
        timed, start = training_seconds(read_episodes(logdir), read_segments(logdir))
        rows = curve(timed, args.window, start)
        curves[name] = rows
        finals[name] = return_at(rows, args.frames) if rows else None
        write_csv(os.path.join(args.out, f"{run_name(logdir)}_curve.csv"), rows)
        launched = {} if args.plot else {"env": args.env, "agent": args.agent, "actors": args.actors,
                                         "envs_per_actor": args.envs, "gin_bindings": args.gin_bindings}
        if not args.plot:
            launched["invocations"] = len(read_segments(logdir))
            # The budget counts frames trained; an episode's frames are stepped, and the last episode may
            # end before the budget is trained: the last checkpoint says how far training went.
            saved = checkpoint_summary(os.path.join(args.out, name))
            launched.update(trained_frames=saved.get("environment_frames"),
                            budget_reached=saved.get("budget_reached"))
        print(json.dumps({"benchmark": "learning", "run": name, "game": game, **launched,
                          **summarize(rows, threshold, args.window)}), flush=True)
    write_plot(os.path.join(args.out, f"{label}.png"), curves, game, threshold, args.x)
    return finals


def atari5_summary(finals: dict[str, dict[str, float | None]], frames: int) -> dict:
    """Per game the seeds' mean return at `frames` and its human-normalised score, and the Atari-5
    score of those means (None until every game has a return there)."""
    means = {}
    for game in atari5.GAMES:
        returns = [r for r in finals[game].values() if r is not None]
        means[game] = sum(returns) / len(returns) if returns and len(returns) == len(finals[game]) else None
    complete = all(m is not None for m in means.values())
    return {"benchmark": "learning", "suite": "atari5", "frames": frames, "mean_return": means,
            "human_normalized": {g: None if m is None else round(atari5.human_normalized(g, m), 2)
                                 for g, m in means.items()},
            "atari5_score": round(atari5.atari5_score(means), 2) if complete else None}


if __name__ == "__main__":
    sys.exit(main())
