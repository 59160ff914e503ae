"""seed-plot: learning curves of finished or running runs, as PNG or SVG.

    seed-plot runs/Pong_vtrace_20261124_181600 --out pong.png
    seed-plot 'new default=runs/a,runs/b,runs/c' 'IMPALA=runs/d' --reference Pong --out pong.svg
    seed-plot runs/CartPole-v1_vtrace_* --x time --window 20 --out cartpole.png

Each RUN is a run directory (its episodes.csv) or a copy of an episodes.csv; `LABEL=RUN,RUN,...`
names a group, drawn as the mean over its runs with the band between their lowest and highest
curve. The y axis is the mean raw return over the last `--window` training episodes (evaluation
episodes are left out); the x axis is environment frames stepped (frame skip 4 on Atari) or, with
`--x time`, wall time since the run's first episode. Needs matplotlib
(.venv/bin/pip install -e '.[plot]' in the checkout).
"""
import argparse
import csv
import os
import sys
from collections.abc import Sequence

# Public learning curves, (environment frames with frame skip 4 on Atari, mean return); sources in
# the experiment record (benchmarks/experiments/): CleanRL's and rl_games' reports, RLlib's tuned examples.
REFERENCES: dict[str, dict[str, list[tuple[int, float]]]] = {
    "Pong": {"CleanRL PPO, 8 envs": [(10_000_000, 15.0), (20_000_000, 19.5), (40_000_000, 20.4)],
             "rl_games + EnvPool PPO, 64 envs": [(3_300_000, 14.2), (6_600_000, 19.4), (16_400_000, 19.8)],
             "RLlib IMPALA, 160 envs": [(10_400_000, -18.4), (15_500_000, 5.0), (18_500_000, 17.9)]},
    "Breakout": {"CleanRL PPO, 8 envs": [(10_000_000, 65.0), (20_000_000, 210.0), (40_000_000, 415.0)],
                 "RLlib IMPALA, 160 envs": [(40_000_000, 385.0)]},
    # MuJoCo: env steps (no frame skip); the figures issue 28 quotes (CleanRL's benchmark tables, rl-baselines3-zoo).
    "HalfCheetah-v5": {"CleanRL PPO": [(1_000_000, 1443.0)], "rl-zoo PPO (tuned)": [(1_000_000, 5819.0)],
                       "CleanRL SAC": [(1_000_000, 9635.0)]},
    "Hopper-v5": {"CleanRL PPO": [(1_000_000, 2383.0)]},
    "Walker2d-v5": {"CleanRL PPO": [(1_000_000, 2288.0)]},
}

Episode = tuple[int, float, float | None]  # env frames stepped, raw return, Unix time (or None)
Row = tuple[int, float | None, float]  # env frames, wall seconds (or None), mean return


def episodes_csv(run: str) -> str:
    return run if os.path.isfile(run) else os.path.join(run, "episodes.csv")


def read_training_rows(run: str) -> list[dict[str, str]]:
    """The training envs' rows of a run directory's episodes.csv (or a copy of it), as written; a row
    still being written is left out."""
    path = episodes_csv(run)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    return [r for r in csv.DictReader(text[:text.rfind("\n") + 1].splitlines()) if r["evaluation"] == "0"]


def read_episodes(run: str) -> list[Episode]:
    """The training envs' episodes of a run directory or a copy of its episodes.csv. Files from before
    episodes.csv had a `time` column give None."""
    return [(int(r["env_frames"]), float(r["raw_return"]), float(r["time"]) if r.get("time") else None)
            for r in read_training_rows(run)]


def curve(episodes: Sequence[Episode], window: int, start_time: float | None = None) -> list[Row]:
    """One row per episode: its env frames, wall seconds since `start_time` (default: the first
    episode's time), and the mean return over the last `window` episodes."""
    if start_time is None:
        start_time = next((e[2] for e in episodes if e[2] is not None), None)
    rows, returns = [], []
    for frames, episode_return, when in episodes:
        returns = (returns + [episode_return])[-window:]
        wall = None if when is None or start_time is None else round(when - start_time, 1)
        rows.append((frames, wall, sum(returns) / len(returns)))
    return rows


def parse_run_spec(spec: str) -> tuple[str, list[str]]:
    """'LABEL=RUN,RUN' -> (LABEL, [RUN, RUN]); a bare RUN is labelled by its name."""
    if "=" in spec:
        label, runs = spec.split("=", 1)
        return label, [r for r in runs.split(",") if r]
    return os.path.splitext(os.path.basename(os.path.normpath(spec)))[0], [spec]


def _xy(rows: Sequence[Row], x: str):
    if x == "time":
        rows = [r for r in rows if r[1] is not None]
        return [r[1] / 60 for r in rows], [r[2] for r in rows]
    return [r[0] / 1e6 for r in rows], [r[2] for r in rows]


def band(curves, points: int = 200):
    """Mean, lowest and highest of several (x, y) curves on a common grid over the x range all
    of them cover (each interpolated linearly between its own points)."""
    import numpy as np

    grid = np.linspace(max(c[0][0] for c in curves), min(c[0][-1] for c in curves), points)
    values = np.array([np.interp(grid, *c) for c in curves])
    return grid, values.mean(axis=0), values.min(axis=0), values.max(axis=0)


def plot_runs(ax, runs: Sequence[Sequence[Row]], x: str = "frames", label: str | None = None):
    """Draws one run as a line, or several as their mean and min-max band, on a matplotlib axis;
    returns the line drawn (x values, y values), None where no run has rows."""
    curves = [c for c in (_xy(rows, x) for rows in runs if rows) if c[0]]
    if not curves:
        return None
    if len(curves) == 1:
        ax.plot(*curves[0], label=label, linewidth=1.2)
        return curves[0]
    grid, mean, low, high = band(curves)
    line, = ax.plot(grid, mean, label=f"{label or 'seeds'} (mean of {len(curves)})", linewidth=1.5)
    ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.2)
    return list(grid), list(mean)


def draw(path: str, groups: dict[str, list[list[Row]]], x: str = "frames", game: str | None = None,
         threshold: float | None = None, title: str | None = None) -> dict[str, tuple]:
    """Writes the plot to `path` (.png or .svg, 880 x 550 pixels as PNG): one line per single-run
    group; for a group of several runs their mean over the frames (or minutes) all of them reached,
    and the min-max band. Returns each group's plotted line, label -> (x values, y values)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    if len(groups) > 10:  # the default cycle has 10 colours: an 11th curve would repeat the first's
        ax.set_prop_cycle(color=plt.get_cmap("tab20").colors)
    plotted = {}
    for label, runs in groups.items():
        line = plot_runs(ax, runs, x, label)
        if line is not None:
            plotted[label] = line
    if x == "frames":
        for (name, points), marker in zip(REFERENCES.get(game, {}).items(), "osD^v"):
            ax.plot([p[0] / 1e6 for p in points], [p[1] for p in points], linestyle=":", marker=marker,
                    color="gray", label=name)
    if threshold is not None:
        ax.axhline(threshold, color="black", linewidth=0.6, linestyle="--")
    ax.set_xlabel("environment frames stepped (millions, frame skip 4 on Atari)" if x == "frames"
                  else "wall time (minutes)")
    ax.set_ylabel("mean return, last episodes")
    ax.set_title(title if title is not None else (game or ""))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return plotted


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="seed-plot", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory or episodes.csv, or LABEL=RUN,RUN,...")
    parser.add_argument("--out", default="returns.png", help="the figure: .png or .svg (default returns.png)")
    parser.add_argument("--x", choices=("frames", "time"), default="frames")
    parser.add_argument("--window", type=int, default=100, help="episodes in the moving mean (default 100)")
    parser.add_argument("--reference", metavar="GAME", help=f"draw public curves for {', '.join(REFERENCES)}")
    parser.add_argument("--threshold", type=float, help="draw a horizontal line at this return")
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    if args.window < 1:
        parser.error(f"--window must be positive, got {args.window}")
    if os.path.splitext(args.out)[1].lower() not in (".png", ".svg"):
        parser.error(f"--out {args.out!r}: use a .png or .svg file name")
    if args.reference and args.reference not in REFERENCES:
        parser.error(f"no reference curves for {args.reference!r}; known: {', '.join(REFERENCES)}")
    groups = {}
    for spec in args.runs:
        label, runs = parse_run_spec(spec)
        if "=" not in spec and label in groups:  # two runs with the same name: keep them apart
            label = spec
        if not runs:
            parser.error(f"{spec!r} names no runs; write LABEL=RUN,RUN")
        missing = [r for r in runs if not os.path.exists(episodes_csv(r))]
        if missing:
            parser.error(f"no episodes.csv in {', '.join(missing)} (give a run directory or an episodes.csv)")
        groups.setdefault(label, []).extend(curve(read_episodes(r), args.window) for r in runs)
    if not any(rows for runs in groups.values() for rows in runs):
        parser.error("no finished training episodes in the runs given yet")
    try:
        draw(args.out, groups, args.x, args.reference, args.threshold, args.title)
    except ImportError:
        parser.error("seed-plot needs matplotlib: .venv/bin/pip install -e '.[plot]' in the checkout")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
