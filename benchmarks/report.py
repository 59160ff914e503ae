"""Results tables and plots, generated from benchmarks/results/ and its manifest, never typed.

The rule: every table and plot of results in README.md and docs/**/*.md is rendered by this script from
the files in benchmarks/results/ (the episodes, curves and segments of the learning runs, the JSON and
JSONL records of the speed benchmarks) and from benchmarks/results/manifest.json, which says what each
result is (agent, env, game, config and bindings, command, commit, host, seeds, budget, status). A table
lives between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` and `render` rewrites it; `check`
fails where a block differs from what `render` would write, so a figure cannot drift from its files.
Prose around a block links to the table instead of repeating its figures. Results enter
benchmarks/results/ only through `publish`, which copies a run's files out of its (git-ignored) run
directory and adds its manifest entry with the commit and host that made it.

    .venv/bin/python benchmarks/report.py render            # rewrite every generated block
    .venv/bin/python benchmarks/report.py render --plots    # ... and redraw the plots they link
    .venv/bin/python benchmarks/report.py plots             # only redraw the plots
    .venv/bin/python benchmarks/report.py check             # exit 1 naming each stale block
    .venv/bin/python benchmarks/report.py publish runs/learning/K_seed1 runs/learning/K_seed2 --label pong_K \\
        --title "V-trace Pong, run K" --command "benchmarks/learning.py atari vtrace --seeds 1 2 --label K" \\
        --status default

Numbers follow benchmarks/learning.py's rules: a return is the mean over the last 100 training
episodes; the return at a mark is that mean as it stood at the mark (a run that ended within 2.5 % short
of a mark, as runs whose episodes end in rounds stop short of their budget, counts with its last mean);
a target counts as passed once a mean over 100 episodes reaches it; frames are environment frames
stepped (frame skip 4 on Atari); wall time is the invocations' own training time (their segments).
"""
import argparse
import bisect
import csv
import datetime
import functools
import glob
import inspect
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
sys.path.insert(0, REPO)
import atari5 as atari5_scores  # noqa: E402  (benchmarks/)
from learning import THRESHOLDS, copy_out, read_segments, return_at, summarize, training_seconds, write_csv  # noqa: E402

from seed.envs.atari import create_atari_envs  # noqa: E402
from seed.plot import curve, draw, plot_runs, read_episodes, read_training_rows  # noqa: E402

MANIFEST = "benchmarks/results/manifest.json"
LEARNING_DIR = "benchmarks/results/learning"
PLOTS_DIR = "docs/img/results"  # under docs/, so that mkdocs serves what the docs link
WINDOW = 100
MARK_TOLERANCE = 0.025
STATUSES = ("default", "ablation", "probe", "superseded")
AGENTS = {"vtrace": "V-trace", "r2d2": "R2D2", "ppo": "PPO", "sac": "SAC"}
ENVS = {"atari": "Atari", "classic": "classic control", "mujoco": "MuJoCo", "dmc": "dm_control", "football": "Football",
        "procgen": "Procgen", "dmlab": "DeepMind Lab (a stand-in here)"}
# The frames at which the tables read a return, per family: Football's academy goals by 1M steps,
# Procgen's reference points at 5M and 10M, dm_control's at 500k and 1M (issue 76).
MARKS = {"atari": (2_500_000, 5_000_000, 10_000_000), "mujoco": (300_000, 500_000, 1_000_000),
         "classic": (50_000, 100_000, 300_000), "football": (100_000, 300_000, 1_000_000),
         "procgen": (1_000_000, 5_000_000, 10_000_000), "dmc": (100_000, 500_000, 1_000_000),
         "dmlab": (10_000_000, 100_000_000, 1_000_000_000)}
# A marker is a line of its own (a marker quoted in prose or in `code` is not one).
MARKER = re.compile(r"^[ \t]*<!-- generated:(?P<name>[A-Za-z0-9_-]+) -->[ \t]*\n(?P<body>.*?)"
                    r"^[ \t]*<!-- /generated:(?P=name) -->[ \t]*$", re.DOTALL | re.MULTILINE)
ANY_MARKER = re.compile(r"^[ \t]*<!-- (/?)generated:([A-Za-z0-9_-]+) -->[ \t]*$", re.MULTILINE)
RENDER_COMMAND = ".venv/bin/python benchmarks/report.py render"


class ReportError(Exception):
    """A generated block or the manifest is wrong in a way render cannot fix."""


# ---------------------------------------------------------------------------------------------------
# The manifest and the files it names

def load_manifest(root: str = REPO) -> dict:
    with open(os.path.join(root, MANIFEST)) as f:
        return json.load(f)


def save_manifest(manifest: dict, root: str = REPO) -> None:
    path = os.path.join(root, MANIFEST)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(path + ".tmp", path)


def learning_entries(manifest: dict) -> list[dict]:
    return [e for e in manifest["results"] if e.get("kind", "learning") == "learning"]


def entry(manifest: dict, label: str) -> dict:
    for e in manifest["results"]:
        if e["label"] == label:
            return e
    raise ReportError(f"no manifest entry labelled {label!r}")


def episodes_files(e: dict, root: str = REPO) -> dict[int, str]:
    """Seed -> path of each of an entry's episodes copies (LABEL_seedN_episodes.csv; a copy without a
    seed in its name, as the first Pong probes', is the entry's one seed)."""
    runs = {}
    for path in e["files"]:
        name = os.path.basename(path)
        if not name.endswith("_episodes.csv"):
            continue
        match = re.search(r"_seed(\d+)_episodes\.csv$", name)
        seed = int(match.group(1)) if match else e["seeds"][0]
        runs[seed] = os.path.join(root, path)
    return dict(sorted(runs.items()))


@functools.cache
def _rows(path: str, mtime: float) -> tuple:
    timed, start = training_seconds(read_episodes(path), read_segments(path))
    return tuple(curve(timed, WINDOW, start))


def rows_of(path: str) -> tuple:
    """A copy's curve as learning.py computes it: (env frames, training seconds, mean of the last 100)."""
    return _rows(path, os.path.getmtime(path))


def runs_of(e: dict, root: str = REPO) -> list[tuple[int, tuple]]:
    return [(seed, rows_of(path)) for seed, path in episodes_files(e, root).items()]


def last_training_frames(path: str) -> int:
    """The env frames of a copy's last training episode (read_episodes' last row, read from the end)."""
    with open(path) as f:
        text = f.read()
    lines = text[:text.rfind("\n") + 1].splitlines()
    header = next(csv.reader(lines[:1]))
    frames, evaluation = header.index("env_frames"), header.index("evaluation")
    for row in csv.reader(reversed(lines[1:])):
        if row[evaluation] == "0":
            return int(row[frames])
    return 0


def frames_reached(e: dict, root: str = REPO) -> dict[str, int]:
    return {str(seed): last_training_frames(path) for seed, path in episodes_files(e, root).items()}


def target_return(e: dict) -> float | None:
    target = e.get("target") or {}
    return target.get("return")


# ---------------------------------------------------------------------------------------------------
# Numbers

def at_mark(rows: Sequence, mark: float) -> float | None:
    """The 100-episode mean as it stood at `mark` (learning.py's return_at); a run that ended within
    MARK_TOLERANCE short of the mark counts with its last mean; None where it stopped earlier."""
    if not rows:
        return None
    if rows[-1][0] >= mark:
        return return_at(rows, mark)
    return round(rows[-1][2], 2) if rows[-1][0] >= mark * (1 - MARK_TOLERANCE) else None


def seconds_at(rows: Sequence, mark: float) -> float | None:
    """Training seconds (the invocations' own time) when the curve first reached `mark` frames, with
    at_mark's tolerance for a run that ended just short of it; None without wall times."""
    reached = [r for r in rows if r[0] >= mark * (1 - MARK_TOLERANCE)]
    return reached[0][1] if reached and reached[0][1] is not None else None


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes} min"


def first_crossing(rows: Sequence, threshold: float | None) -> int | None:
    return summarize(list(rows), threshold, WINDOW)["frames_to_threshold"] if threshold is not None and rows else None


def fmt_frames(frames: float | None) -> str:
    if frames is None:
        return "-"
    return f"{frames / 1e6:.2f}M" if round(frames / 1e3) >= 1000 else f"{frames / 1e3:.0f}k"


def fmt_budget(frames: float | None) -> str:
    if not frames:
        return "-"
    return f"{frames / 1e6:g}M" if frames >= 1e6 else f"{frames / 1e3:g}k"


def fmt_return(value: float | None, e: dict) -> str:
    """Pong signed with one decimal, other Atari games one decimal, Football's goals per episode two
    decimals, MuJoCo, classic and the rest whole numbers."""
    if value is None:
        return "-"
    if e.get("env") == "football":
        return f"{round(value, 2) + 0.0:.2f}"
    if e.get("env") == "atari":
        value = round(value, 1) + 0.0  # no -0.0
        return f"{value:+.1f}" if e.get("game") == "Pong" else f"{value:.1f}"
    return f"{round(value):,}"


def fmt_target(e: dict) -> str:
    value = target_return(e)
    if value is None:
        return "-"
    if e.get("game") == "Pong" and value > 0:
        return f"+{value:g}"
    if abs(value) >= 1000:  # thousands separated; a fraction kept, as the Atari-5 table gives goal levels
        return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"
    return f"{value:g}"


def fmt_spread(values: list[float | None], e: dict) -> str:
    """One value, or the mean of several with their range; '-' where a seed did not get there."""
    if not values or any(v is None for v in values):
        return "-"
    if len(values) == 1:
        return fmt_return(values[0], e)
    return f"{fmt_return(statistics.mean(values), e)} ({fmt_return(min(values), e)} to {fmt_return(max(values), e)})"


def fmt_crossings(crossings: list[int | None]) -> str:
    """The median frames to the target over the seeds that passed it, their range, and how many did."""
    passed = sorted(c for c in crossings if c is not None)
    if not passed:
        return "never"
    text = fmt_frames(statistics.median(passed))
    if len(crossings) > 1 and len(passed) > 1:
        text += f" ({fmt_frames(passed[0])}-{fmt_frames(passed[-1])})"
    if len(passed) < len(crossings):
        text += f", {len(passed)} of {len(crossings)} seeds"
    return text


def fmt_reached(reached: list[int]) -> str:
    low, high = fmt_frames(min(reached)), fmt_frames(max(reached))
    return low if low == high else f"{low}-{high}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(row) + " |" for row in rows])


# ---------------------------------------------------------------------------------------------------
# Plots

class Context:
    """What a table renders against: the results root, the file its block is in (for relative links),
    and the plots its links need (path -> drawing), collected for `render --plots`."""

    def __init__(self, root: str, manifest: dict, target: str):
        self.root, self.manifest, self.target = root, manifest, target
        self.plots: dict[str, Callable[[str], None]] = {}

    def link(self, path: str) -> str:
        """`path` (relative to the root) as a link relative to the file the block is in."""
        return os.path.relpath(os.path.join(self.root, path),
                               os.path.dirname(os.path.join(self.root, self.target))).replace(os.sep, "/")

    def plot(self, name: str, entries: Sequence[dict], x: str = "frames", title: str | None = None) -> str:
        """A plot of `entries` (each the mean of its seeds with their min-max band) named `name`; its
        link from this block's file."""
        path = f"{PLOTS_DIR}/{name}.png"
        first = entries[0]
        root = self.root

        def drawing(out: str) -> None:
            groups = {}
            for e in entries:
                groups[e["label"]] = [list(rows) for _, rows in runs_of(e, root) if rows]
            draw(out, groups, x, first.get("game"), target_return(first),
                 title or f"{first.get('title', first['label'])}")
        self.plots[path] = drawing
        return self.link(path)


def draw_plots(plots: dict[str, Callable[[str], None]], root: str) -> list[str]:
    written = []
    for path, drawing in sorted(plots.items()):
        out = os.path.join(root, path)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        drawing(out + ".tmp.png")
        os.replace(out + ".tmp.png", out)
        written.append(path)
    return written


# ---------------------------------------------------------------------------------------------------
# Tables

def _sorted(entries: list[dict]) -> list[dict]:
    """By agent, env family and game as first listed in the manifest, then manifest order."""
    order = {}
    for e in entries:
        order.setdefault((e.get("agent"), e.get("env"), e.get("game")), len(order))
    agents, envs = list(AGENTS), list(ENVS)
    return sorted(entries, key=lambda e: (agents.index(e["agent"]) if e.get("agent") in agents else len(agents),
                                          envs.index(e["env"]) if e.get("env") in envs else len(envs),
                                          order[(e.get("agent"), e.get("env"), e.get("game"))]))


def headline(ctx: Context) -> list[str]:
    rows = []
    for e in _sorted([e for e in learning_entries(ctx.manifest) if e.get("status") == "default"]):
        runs = runs_of(e, ctx.root)
        at_budget = [at_mark(r, e["frames"]) for _, r in runs]
        shown = [v for v in at_budget if v is not None]
        per_seed = ", ".join(fmt_return(v, e) for v in at_budget)
        value = (fmt_return(statistics.mean(shown), e) if len(shown) == len(at_budget) else "-") + \
            (f" ({per_seed})" if len(runs) > 1 else "")
        crossings = [first_crossing(r, target_return(e)) for _, r in runs]
        per_seed = ", ".join(fmt_frames(c) if c is not None else "never" for c in crossings)
        passed = sorted(c for c in crossings if c is not None)
        first = (fmt_frames(statistics.median(passed)) if passed else "never") + \
            (f" ({per_seed})" if len(runs) > 1 else "")
        times = [t for t in (seconds_at(r, e["frames"]) for _, r in runs) if t is not None]
        rows.append([AGENTS.get(e["agent"], e["agent"]), ENVS.get(e["env"], e["env"]), e["game"], str(len(runs)),
                     fmt_budget(e["frames"]), value, f"{fmt_target(e)}: {first}",
                     fmt_duration(statistics.median(times)) if times else "-",
                     f"[curve]({ctx.plot(e['label'], [e])})"])
    return table(["agent", "env", "game", "seeds", "frames", "return at the budget: mean (per seed)",
                  "target: first passed at, median (per seed)", "training time to the budget, median", "curve"],
                 rows)


def support(ctx: Context) -> list[str]:
    configs: dict[tuple[str, str], list[str]] = {}
    tasks: dict[tuple[str, str], list[str]] = {}
    config_dir = os.path.join(ctx.root, "seed", "configs")
    for path in sorted(glob.glob(os.path.join(config_dir, "*.gin"))):
        env, agent = os.path.basename(path)[:-4].split("_")[:2]
        configs.setdefault((agent, env), []).append(os.path.basename(path))
    for path in sorted(glob.glob(os.path.join(config_dir, "tasks", "*", "*.gin"))):
        env, agent = os.path.basename(os.path.dirname(path)).split("_")[:2]
        tasks.setdefault((agent, env), []).append(os.path.basename(path)[:-4])
    agents = list(AGENTS) + sorted({a for a, _ in configs} - set(AGENTS))
    envs = list(ENVS) + sorted({v for _, v in configs} - set(ENVS))
    entries = learning_entries(ctx.manifest)
    defaults = [e for e in entries if e.get("status") == "default"]
    probes = [e for e in entries if e.get("status") == "probe"]
    rows = []
    for agent in agents:
        for env in envs:
            names = configs.get((agent, env), [])
            works = ", ".join(f"`{n}`" for n in names) if names else "no config"
            if tasks.get((agent, env)):
                works += "; task configs: " + ", ".join(tasks[(agent, env)])
            tuned = _sorted([e for e in defaults if (e["agent"], e["env"]) == (agent, env)])
            # Where nothing is tuned yet, the probes' curves say how far a config got.
            drawn = tuned or _sorted([e for e in probes if (e["agent"], e["env"]) == (agent, env)])
            games = [e["game"] for e in drawn]
            # A game drawn twice (two probes of it) is named by each entry's label instead.
            name = {e["label"]: e["game"] if games.count(e["game"]) == 1 else e["label"] for e in drawn}
            rows.append([AGENTS.get(agent, agent), ENVS.get(env, env), works,
                         ", ".join(f"{e['game']} ({len(e['seeds'])} seeds)" if len(e["seeds"]) > 1 else e["game"]
                                   for e in tuned) or "no",
                         ", ".join(f"[{name[e['label']]}{'' if tuned else ' (probe)'}]({ctx.plot(e['label'], [e])})"
                                   for e in drawn) or "-"])
    return table(["agent", "env", "works (a config)", "tuned (a default result)", "curve"], rows)


def runs_table(ctx: Context, entries: list[dict], env: str) -> list[str]:
    marks = MARKS[env]
    rows = []
    for e in _sorted(entries):
        runs = runs_of(e, ctx.root)
        at = [fmt_spread([at_mark(r, m) for _, r in runs], e) for m in marks]
        crossings = [first_crossing(r, target_return(e)) for _, r in runs]
        rows.append([f"`{e['label']}`", e["title"], e["status"], ", ".join(str(s) for s, _ in runs)] + at
                    + [f"{fmt_target(e)}: {fmt_crossings(crossings)}" if target_return(e) is not None else "-",
                       fmt_reached([r[-1][0] if r else 0 for _, r in runs]),
                       f"[curve]({ctx.plot(e['label'], [e])})"])
    return table(["label", "what", "status", "seeds"] + [f"at {fmt_budget(m)}" for m in marks]
                 + ["target: first passed at", "frames reached", "curve"], rows)


STATUS_LEGEND = ("*status: `default`, what the shipped config gives; `ablation`, one setting changed to measure "
                 "what it does; `probe`, a single try of a lever, a hint and not a claim; `superseded`, an earlier "
                 "default. The seeds column lists the seeds run, by number.*")


def _agent_tables(ctx: Context, agent: str, exclude: Callable[[dict], bool] = lambda e: False) -> list[str]:
    entries = [e for e in learning_entries(ctx.manifest) if e["agent"] == agent and not exclude(e)]
    lines = []
    for env in ENVS:
        chosen = [e for e in entries if e["env"] == env]
        if not chosen:
            continue
        if lines:
            lines.append("")
        games = ", ".join(dict.fromkeys(e["game"] for e in _sorted(chosen)))
        lines.append(f"*{ENVS[env]} ({games}): mean return over the last {WINDOW} episodes at "
                     f"{' / '.join(fmt_budget(m) for m in MARKS[env])} env frames; mean (range) over seeds.*")
        lines.append("")
        lines += runs_table(ctx, chosen, env)
    if lines:
        lines += ["", STATUS_LEGEND]
    return lines


def _is_mix_or_gpu(e: dict) -> bool:
    return e["label"].startswith("mix_") or bool(e.get("accelerator"))


def vtrace(ctx: Context) -> list[str]:
    return _agent_tables(ctx, "vtrace", _is_mix_or_gpu)


def ppo(ctx: Context) -> list[str]:
    return _agent_tables(ctx, "ppo")


def sac(ctx: Context) -> list[str]:
    return _agent_tables(ctx, "sac")


def r2d2(ctx: Context) -> list[str]:
    return _agent_tables(ctx, "r2d2")


def _replay_mixes(ctx: Context, game: str) -> list[str]:
    import replay_mixes  # its table, read from the same committed curves

    throughput = sorted(os.path.join(ctx.root, path) for e in ctx.manifest["results"]
                        if e.get("kind") == "replay_mix_throughput" for path in e["files"])
    lines = replay_mixes.learning_table(game, os.path.join(ctx.root, LEARNING_DIR), throughput, WINDOW)
    default = entry(ctx.manifest, replay_mixes.DEFAULT_RUNS[game])
    mixes = [e for e in learning_entries(ctx.manifest) if e["label"].startswith(f"mix_{game.lower()}_")]
    order = list(replay_mixes.MIXES)
    mixes.sort(key=lambda e: order.index(e["label"][len(f"mix_{game.lower()}_"):]))
    link = ctx.plot(f"replay_mixes_{game.lower()}", [default] + mixes,
                    title=f"V-trace {game}: replay mixes (half of each batch replayed) beside the default")
    return lines + ["", f"Curves: [{game}, every mix beside the default]({link})."]


def replay_mixes_pong(ctx: Context) -> list[str]:
    return _replay_mixes(ctx, "Pong")


def replay_mixes_breakout(ctx: Context) -> list[str]:
    return _replay_mixes(ctx, "Breakout")


def _median_rate(rows: Sequence, window_s: float = 30.0) -> float | None:
    """Median env frames/s over consecutive `window_s` windows of training time, each from the last
    episode at or before its start to the last at or before its end (episodes are the only clock here)."""
    points = [(r[1], r[0]) for r in rows if r[1] is not None]
    times = [p[0] for p in points]
    rates, start = [], 0.0
    while points and start + window_s <= points[-1][0]:
        a, b = bisect.bisect_right(times, start) - 1, bisect.bisect_right(times, start + window_s) - 1
        if a >= 0 and b > a and points[b][0] > points[a][0]:
            rates.append((points[b][1] - points[a][1]) / (points[b][0] - points[a][0]))
        start += window_s
    return statistics.median(rates) if rates else None


def gpu(ctx: Context) -> list[str]:
    rows = []
    for e in [e for e in learning_entries(ctx.manifest) if e.get("accelerator")]:
        for _seed, r in runs_of(e, ctx.root):
            goal_s = (e.get("target") or {}).get("wall_s", 300)
            before = [row for row in r if row[1] is not None and row[1] <= goal_s]
            at_goal = f"{fmt_return(before[-1][2], e)} ({fmt_frames(before[-1][0])})" if before else "-"
            crossing = next((row for i, row in enumerate(r) if i + 1 >= WINDOW and target_return(e) is not None
                             and row[2] >= target_return(e)), None)
            rate = _median_rate(r)
            rows.append([f"`{e['label']}`", e["title"], e["accelerator"], f"{e['actors']} × {e['envs']}",
                         f"{rate:,.0f}" if rate else "-", at_goal,
                         f"{fmt_return(r[-1][2], e)} ({fmt_frames(r[-1][0])}, {r[-1][1] / 60:.1f} min)",
                         f"{fmt_target(e)}: " + (f"{crossing[1] / 60:.1f} min" if crossing else "never"),
                         f"[curve]({ctx.plot(e['label'], [e], x='time')})"])
    return table(["label", "what", "GPU", "actors × envs", "env frames/s (median of 30 s windows)",
                  "return after 5 minutes (frames)", "at the end (frames, training time)", "target: first passed at",
                  "curve (minutes)"], rows)


def _jsonl(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _speed_files(ctx: Context, kind: str) -> list[tuple[dict, str]]:
    return [(e, os.path.join(ctx.root, p)) for e in ctx.manifest["results"] if e.get("kind") == kind
            for p in e["files"]]


def speed(ctx: Context) -> list[str]:
    lines = ["*End to end against the component bound (Pong, `atari_vtrace.gin` as it stood; training frames/s = env "
             "frames trained per second; the bound is 1 / Σ 1/throughput of env stepping, inference and training):*",
             ""]
    rows = []
    for e, path in _speed_files(ctx, "speed"):
        name = os.path.basename(path)
        if name.endswith(".jsonl") and "end_to_end" in {r.get("benchmark") for r in _jsonl(path)}:
            bound = None
            for r in _jsonl(path):
                if r.get("benchmark") == "component_bound":
                    bound = r
                elif r.get("benchmark") == "end_to_end":
                    rows.append(_e2e_row(r, bound, r.get("machine", e["host"]).split(" (")[0], "-"))
        elif name.endswith(".log"):
            bound = None
            with open(path) as f:
                for line in f:
                    match = re.match(r"(\w+) round(\d+) (\{.*\})$", line.strip())
                    if not match:
                        continue
                    r = json.loads(match.group(3))
                    if r.get("benchmark") == "component_bound":
                        bound = r
                    elif r.get("benchmark") == "end_to_end":
                        tree = {"before": "before (5f96257)", "main": "after"}.get(match.group(1), match.group(1))
                        rows.append(_e2e_row(r, bound, "2-core build machine", f"{tree}, round {match.group(2)}"))
    lines += table(["machine", "TensorFlow on", "run", "actors × envs", "training frames/s",
                    "component bound (frames/s)", "ratio", "mean inference batch", "round trip p50 / p99 (ms)"], rows)

    lines += ["", "*Transport: env steps/s through the system as a share of raw stepping (interleaved rounds; grpc "
              "only is real actors against a server that only answers):*", ""]
    rows = []
    for _e, path in _speed_files(ctx, "speed"):
        for r in _jsonl(path) if path.endswith(".jsonl") else []:
            if r.get("benchmark") == "transport_summary":
                rows.append([f"{r['actors']} × {r['envs_per_actor']}", str(r["env_groups"]), str(r["rounds"]),
                             f"{r['raw_agent_steps_per_s_median']:,.0f}", f"{r['grpc_only_ratio_to_raw_median']:.2f}",
                             f"{r['ratio_to_raw_median']:.2f}",
                             f"{r['ratio_to_raw_mean']:.2f} ± {r['ratio_to_raw_sem']:.3f}", os.path.basename(path)])
    lines += table(["actors × envs", "env groups", "rounds", "raw env steps/s (median)", "grpc only (median ratio)",
                    "through the system (median ratio)", "mean ratio ± standard error", "file"], rows)

    lines += ["", "*Scaling over actor processes (4 envs each; the batch is complete once every connected env is "
              "in it):*", ""]
    rows = []
    for _e, path in _speed_files(ctx, "speed"):
        for r in _jsonl(path) if path.endswith(".jsonl") else []:
            if r.get("benchmark") == "scaling":
                rows.append([f"{r['actors']} × {r['envs_per_actor']}", f"{r['training_frames_per_s']:,.0f}",
                             f"{r['mean_inference_batch']:.1f}",
                             f"{r['actor_round_trip_ms_p50']:.1f} / {r['actor_round_trip_ms_p99']:.1f}",
                             os.path.basename(path)])
    lines += table(["actors × envs", "training frames/s", "mean inference batch", "round trip p50 / p99 (ms)",
                    "file"], rows)

    lines += ["", "*Replay mixes: env frames/s and updates/s with half of each batch replayed, beside the fresh-only "
              "default measured in the same invocation:*", ""]
    rows = []
    for _e, path in _speed_files(ctx, "replay_mix_throughput"):
        with open(path) as f:
            measured = json.load(f)
        for r in measured["results"]:
            rows.append([r["mix"], f"{r['env_frames_per_s']:,}", f"{r['env_frames_ratio_to_default']:.2f}",
                         f"{r['updates_per_s']:.2f}", f"{r['updates_ratio_to_default']:.2f}", os.path.basename(path)])
    lines += table(["mix", "env frames/s", "vs default", "updates/s", "vs default", "file"], rows)
    return lines


def _e2e_row(r: dict, bound: dict | None, machine: str, run: str) -> list[str]:
    bound_fps = bound["frames_per_s"] if bound else None
    devices = (bound or {}).get("devices", [])
    return [machine, "GPU" if any(d.startswith("GPU") for d in devices) else "CPU" if devices else "-", run,
            f"{r['actors']} × {r['envs_per_actor']}", f"{r['training_frames_per_s']:,.0f}",
            f"{bound_fps:,.0f}" if bound_fps else "-", f"{r['ratio_to_bound']:.2f}", f"{r['mean_inference_batch']:.1f}",
            f"{r['actor_round_trip_ms_p50']:.1f} / {r['actor_round_trip_ms_p99']:.1f}"]


# Published Atari-5 scores at 10M frames (issue 77; read off published curves, +-10-15 %).
ATARI5_REFERENCES = (("PPO, 16 envs (SLM-Lab, sticky actions)", 30), ("Dopamine DQN (sticky actions)", 9.6),
                     ("Dopamine Rainbow (sticky actions)", 43), ("Dopamine IQN (sticky actions)", 68))


def _suite_score_curve(games: dict[str, list[tuple[int, tuple]]], step: int = 100_000) -> list[tuple[int, float]]:
    """The Atari-5 score of the seeds' mean returns, every `step` frames per game, over the frames
    every run of every game reached."""
    runs = [rows for game_runs in games.values() for _, rows in game_runs]
    if not runs or not all(runs):
        return []
    points = []
    for frames in range(step, min(rows[-1][0] for rows in runs) + 1, step):
        means = {}
        for game, game_runs in games.items():
            values = [return_at(rows, frames) for _, rows in game_runs]
            if None in values:
                break
            means[game] = statistics.fmean(values)
        else:
            points.append((frames, atari5_scores.atari5_score(means)))
    return points


def _to_goal(runs: list[tuple[int, tuple]], threshold: float) -> str:
    """Frames and training time to `threshold`, the median over the seeds that passed it."""
    passed = [(s["frames_to_threshold"], s["wall_s_to_threshold"]) for s in
              (summarize(list(rows), threshold, WINDOW) for _, rows in runs if rows)
              if s["frames_to_threshold"] is not None]
    if not passed:
        return "never"
    seconds = [t for _, t in passed if t is not None]
    text = f"{fmt_frames(statistics.median(f for f, _ in passed))}, " \
        f"{fmt_duration(statistics.median(seconds) if seconds else None)}"
    return text + (f" ({len(passed)} of {len(runs)} seeds)" if len(passed) < len(runs) else "")


def _draw_suite(out: str, name: str, games: dict[str, list[tuple[int, tuple]]],
                score: list[tuple[int, float]]) -> None:
    """One panel per game (the seeds' mean and min-max band, the game's goal level dashed, its random
    score dotted: the issue's floor) and one of the Atari-5 score with the published scores at 10M frames drawn in."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(12, 7))
    for ax, game in zip(axes.flat, atari5_scores.GAMES):
        if plot_runs(ax, [rows for _, rows in games.get(game, [])]) and len(games[game]) > 1:
            ax.legend(fontsize=7)
        ax.axhline(atari5_scores.goal_return(game), color="black", linewidth=0.6, linestyle="--")
        ax.axhline(atari5_scores.RANDOM[game], color="gray", linewidth=0.6, linestyle=":")
        ax.set_title(game, fontsize=10)
        ax.grid(alpha=0.3)
    ax = axes.flat[-1]
    if score:
        ax.plot([f / 1e6 for f, _ in score], [v for _, v in score], linewidth=1.5, label=f"suite {name}")
    for (who, value), marker in zip(ATARI5_REFERENCES, "osD^v"):
        ax.plot([10], [value], linestyle="", marker=marker, color="gray", label=f"{who}: {value:g}")
    ax.axhline(atari5_scores.GOAL, color="black", linewidth=0.6, linestyle="--")
    ax.set_title("Atari-5 score (published scores at 10M)", fontsize=10)
    # Head room above the goal for the legend, clear of the published points just below it.
    ax.set_ylim(bottom=0, top=1.45 * max([atari5_scores.GOAL] + [v for _, v in score]))
    ax.set_xlim(left=0, right=10.5)
    ax.legend(fontsize=6, loc="upper left")
    ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("env frames (millions, frame skip 4)")
    fig.suptitle(f"Atari-5 suite {name}: mean return over the last {WINDOW} episodes; dashed: each game's "
                 f"goal level, and the goal {atari5_scores.GOAL:g}; dotted: random play", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def atari_setting(e: dict, name: str, root: str = REPO) -> float | None:
    """The value of `create_atari_envs.<name>` an entry's runs played with: its bindings', else its gin
    file's; None where neither says."""
    pattern = name + r"\s*=\s*([0-9._]+)"
    for binding in reversed(e.get("bindings") or []):
        if match := re.search(pattern, binding):
            return float(match.group(1))
    try:
        with open(os.path.join(root, e.get("config") or "")) as f:
            match = re.search(r"^\s*create_atari_envs\." + pattern, f.read(), re.MULTILINE)
    except OSError:
        return None
    return float(match.group(1)) if match else None


def sticky_actions(e: dict, root: str = REPO) -> float | None:
    """The probability of repeating the previous action that an entry's runs played with."""
    return atari_setting(e, "repeat_action_probability", root)


def cut_at_limit(path: str, mark: float, limit: float) -> int:
    """How many of the last WINDOW training episodes at `mark` frames (the curve's episodes up to it)
    ran `limit` frames, the time limit: games cut before their play ended, as a policy that stalls the
    game gets them; their return is the score when cut."""
    rows = [r for r in read_training_rows(path) if int(r["env_frames"]) <= mark]
    return sum(int(r["length_frames"]) >= limit for r in rows[-WINDOW:])


def cut_counts(e: dict, mark: float, root: str = REPO) -> list[int]:
    """cut_at_limit for each seed of an Atari entry, at its config's time limit (else the env's default)."""
    limit = atari_setting(e, "max_episode_frames", root) or \
        inspect.signature(create_atari_envs).parameters["max_episode_frames"].default
    return [cut_at_limit(path, mark, limit) for path in episodes_files(e, root).values()]


def suite_config(entries) -> str:
    """What a suite's games trained with, for its caption: the gin file and any bindings beyond it, so
    that suites of a search say which lever each one is."""
    configs = {(os.path.basename(e.get("config") or "?"), tuple(e.get("bindings") or [])) for e in entries}
    if len(configs) > 1:
        return "the games' configs differ: see their manifest entries"
    config, bindings = configs.pop()
    return f"`{config}` " + ("with " + ", ".join(f"`{b}`" for b in bindings) if bindings else "as it stands")


# The page whose `atari5` block holds the suites' full tables, which the README's summary links to.
ATARI5_PAGE = "docs/agents/vtrace.md"
NO_ATARI5_SUITE = ("*No Atari-5 suite has been published yet (`benchmarks/learning.py --suite atari5`, then "
                   "`report.py publish --suite NAME`).*")


def _atari5_suites(ctx: Context) -> dict[str, dict[str, dict]]:
    """suite name -> Atari-5 game -> its manifest entry."""
    suites: dict[str, dict[str, dict]] = {}
    for e in learning_entries(ctx.manifest):
        if e.get("suite") and e.get("game") in atari5_scores.GAMES:
            suites.setdefault(e["suite"], {})[e["game"]] = e
    return suites


def atari5_summary(ctx: Context) -> list[str]:
    """A line per Atari-5 suite, for the README: what it trains, the Atari-5 score at 10M frames against
    the goal (or the games it still lacks there), the game furthest below human play, and its full table."""
    suites = _atari5_suites(ctx)
    if not suites:
        return [NO_ATARI5_SUITE]
    budget = MARKS["atari"][-1]
    rows = []
    for name, games in sorted(suites.items()):
        at_budget, seeds = {}, []
        for game, e in games.items():
            runs = runs_of(e, ctx.root)
            seeds.append(len(runs))
            values = [at_mark(r, budget) for _, r in runs]
            if values and None not in values:
                at_budget[game] = statistics.fmean(values)
        missing = [g for g in atari5_scores.GAMES if g not in at_budget]
        score = (f"**{atari5_scores.atari5_score(at_budget):.1f}**" if not missing
                 else "- (no 10M result for " + ", ".join(missing) + ")")
        cut = [g for g in at_budget if any(cut_counts(games[g], budget, ctx.root))]
        if cut:
            score += f"; counts games cut at the time limit in {', '.join(cut)}"
        hns = {g: atari5_scores.human_normalized(g, v) for g, v in at_budget.items()}
        lowest = min(hns, key=hns.get) if hns else None
        rows.append([f"`{name}`", suite_config(games.values()),
                     str(min(seeds)) if min(seeds) == max(seeds) else f"{min(seeds)}-{max(seeds)}", score,
                     f"{lowest}: {hns[lowest]:.1f} %" if lowest else "-",
                     f"[table and curves]({ctx.link(ATARI5_PAGE)}#atari-5)"])
    return table(["suite", "trained with", "seeds per game", f"Atari-5 score at 10M (goal {atari5_scores.GOAL:g})",
                  "lowest human-normalised game at 10M", "per game"], rows)


def atari5(ctx: Context) -> list[str]:
    """Per suite (the entries' `suite`), each Atari-5 game's mean return over its seeds at 2.5M, 5M and
    10M frames, its human-normalised score at 10M, the frames and training minutes to its goal level, the
    Atari-5 score at each mark and when it first reached the goal, and a grid of curves."""
    suites = _atari5_suites(ctx)
    if not suites:
        return [NO_ATARI5_SUITE]
    marks = MARKS["atari"]
    even = atari5_scores.even_hns()
    lines = []
    for name, games in sorted(suites.items()):
        game_runs = {game: runs_of(e, ctx.root) for game, e in games.items()}
        means = {}
        rows = []
        for game in atari5_scores.GAMES:
            runs = game_runs.get(game, [])
            at = [[at_mark(r, m) for _, r in runs] for m in marks]
            means[game] = [statistics.fmean(v) if v and None not in v else None for v in at]
            hns = means[game][-1]
            goal = atari5_scores.goal_return(game)
            cut = ""
            if hns is not None and any(counts := cut_counts(games[game], marks[-1], ctx.root)):
                cut = f" ({' / '.join(map(str, counts))} of the last {WINDOW} games cut at the time limit)"
            rows.append([game, ", ".join(str(s) for s, _ in runs) or "-"]
                        + [f"{m:,.1f}" if m is not None else "-" for m in means[game]]
                        + [f"{atari5_scores.human_normalized(game, hns):.1f} %{cut}" if hns is not None else "-",
                           f"{goal:,.1f}: {_to_goal(runs, goal) if runs else '-'}",
                           f"{atari5_scores.RANDOM[game]:g} / {atari5_scores.HUMAN[game]:g}",
                           f"{atari5_scores.WEIGHTS[game]:g}"])
        scores = []
        for i in range(len(marks)):
            complete = all(means[g][i] is not None for g in atari5_scores.GAMES)
            scores.append(f"**{atari5_scores.atari5_score({g: means[g][i] for g in atari5_scores.GAMES}):.1f}**"
                          if complete else "-")
        score = _suite_score_curve(game_runs) if set(game_runs) == set(atari5_scores.GAMES) else []
        reached = next((f for f, v in score if v >= atari5_scores.GOAL), None)
        if reached is not None:
            per_game = [[next(row[1] for row in r if row[0] >= reached) for _, r in runs]
                        for runs in game_runs.values()]
            seconds = sum(statistics.median(ts) for ts in per_game) if all(None not in ts for ts in per_game) \
                else None
            to_goal = f"**{fmt_frames(reached)}, {fmt_duration(seconds)}** (training time summed over the games)"
        else:
            to_goal = f"never, in {fmt_frames(score[-1][0])} per game" if score else "-"
        rows.append(["**Atari-5 score**", ""] + scores + ["", f"{atari5_scores.GOAL:g}: {to_goal}", "", ""])
        if lines:
            lines.append("")
        sticky = {sticky_actions(e, ctx.root) for e in games.values()}
        protocol = ("no sticky actions" if sticky == {0.0} else f"sticky actions {sticky.pop():g}"
                    if len(sticky) == 1 and None not in sticky else "sticky actions: mixed or unknown")
        lines.append(f"*Suite `{name}` ({protocol}; {suite_config(games.values())}): mean return over the last "
                     f"{WINDOW} episodes at "
                     f"{' / '.join(fmt_budget(m) for m in marks)} env frames, mean over seeds; the Atari-5 score "
                     "is 10^(sum of weight x log10(1 + max(HNS, 0))) - 1 (benchmarks/atari5.py). A game's goal "
                     f"level is its return at {even:.1f} % human-normalised, the level that on all five games "
                     f"gives the goal's Atari-5 score of {atari5_scores.GOAL:g}; the time to it is the run's own "
                     "training time on its host. Games cut at the time limit (`max_episode_frames`, per seed) "
                     "ended before their play did, as a policy that stalls the game gets them: their return is "
                     "the score when cut, and the score counts it.*")
        lines.append("")
        lines += table(["game", "seeds"] + [f"at {fmt_budget(m)}" for m in marks]
                       + ["human-normalised at 10M", "goal level: first passed at (frames, training time)",
                          "random / human", "weight"], rows)
        path = f"{PLOTS_DIR}/atari5_{name}.png"
        ctx.plots[path] = functools.partial(_draw_suite, name=name, games=game_runs, score=score)
        lines += ["", f"[The suite's curves, a panel per game and the Atari-5 score]({ctx.link(path)})"]
    lines.append("")
    lines.append("*Published Atari-5 scores at 10M frames: " + "; ".join(f"{who} {score:g}"
                                                                         for who, score in ATARI5_REFERENCES)
                 + "; CleanRL PPO at 40M frames (no sticky actions) 76.6.*")
    return lines


def _soak_records(ctx: Context) -> list[tuple[dict, dict]]:
    """(manifest entry, chaos.py's record) of every soak result, in manifest order."""
    found = []
    for e, path in _speed_files(ctx, "faults"):
        with open(path) as f:
            found += [(e, r) for r in map(json.loads, filter(str.strip, f)) if r.get("benchmark") == "chaos"]
    return found


def _resource(r: dict, key: str, unit: str = "") -> str:
    q = (r.get("resources") or {}).get(key)
    if not q:
        return "-"
    growth = "-" if q.get("growth") is None else f"{q['growth']:+.1%}"
    return f"{q['min']:g}-{q['max']:g}{unit} (median {q['median']:g}), growth {growth}"


def soaks(ctx: Context) -> list[str]:
    """The chaos soaks: what was done to the run, what it lost, and the learner's resources over it."""
    rows, cuts = [], []
    for e, r in _soak_records(ctx):
        # The docs site holds only docs/, so a result file is named, not linked.
        label = f"`{e['label']}` (`{e['files'][0]}`)"
        network = (f"{r['actor_hosts']} actor hosts, {r['loss_percent']:g} % loss each way on one "
                   f"({r['packets_dropped']:,} packets dropped), {len(r['partitions'])} link cuts"
                   if r.get("network_faults") else "loopback")
        lost = [k["frames_lost"] for k in r["kills"] if "frames_lost" in k]
        kills = (f"{r['learner_kills']} learner ({r['learner_restarts']} restarts; frames lost "
                 f"{', '.join(f'{n:,}' for n in lost) or '-'}; "
                 f"{'each' if all(k.get('lost_at_most_since_checkpoint') for k in r['kills']) else 'NOT each'} "
                 f"at most since the checkpoint), {r['actor_kills']} actor ({r['actor_restarts']} restarts), "
                 f"one actor stopped {r['actor_sigstopped_s']:g} s")
        rows.append([label, f"{r['minutes']:g} min, `{r['config']}`, {r['actors']} × {r['envs_per_actor']}",
                     network, kills, f"{r['streams_lost']} lost, {r['idle_streams_closed']} closed as idle",
                     f"{r['frames_trained']:,}", _resource(r, "rss_mb", " MB"), _resource(r, "fds"),
                     _resource(r, "threads"),
                     "not sampled" if not r.get("resources") else "yes" if r["resources"]["flat"] else "no",
                     "yes" if r["readable_checkpoint"] else "no"])
        for c in r.get("partitions", []):
            cuts.append([f"`{e['label']}`", "the learner's" if c["host"] == "learner" else f"{c['host']}'s",
                         f"{c['at_s'] / 60:.1f} min", f"{c['cut_for_s']:g} s", str(c["connected_before"]),
                         "never" if c["dropped_after_s"] is None else f"{c['dropped_after_s']:g} s",
                         "the soak ended first" if c.get("cut_short_by_the_end")
                         else "not within the next cut's interval" if c["back_after_s"] is None
                         else f"{c['back_after_s']:g} s"])
    lines = table(["soak", "length, config, actors × envs", "network", "kills", "streams", "frames trained",
                   "learner memory", "open descriptors", "threads", "flat (growth within 10 %)",
                   "final checkpoint loads"], rows)
    if cuts:
        lines += ["", "*Each link cut of a network soak: whose link, when, for how long, the learner's actor "
                  "streams before it, when the learner had dropped the cut ones (all of them for its own "
                  "link), and how long after the link returned it had as many again.*", ""]
        lines += table(["soak", "link cut", "at", "for", "streams before", "dropped after", "all back after"], cuts)
    return lines


TABLES: dict[str, Callable[[Context], list[str]]] = {
    "headline": headline, "support": support, "vtrace": vtrace, "ppo": ppo, "sac": sac, "r2d2": r2d2,
    "replay_mixes_pong": replay_mixes_pong, "replay_mixes_breakout": replay_mixes_breakout, "gpu": gpu, "speed": speed,
    "atari5": atari5, "atari5_summary": atari5_summary, "soaks": soaks,
}


# ---------------------------------------------------------------------------------------------------
# Blocks in README.md and docs/**/*.md

def target_files(root: str = REPO) -> list[str]:
    """README.md and every docs/**/*.md, relative to the root, sorted."""
    found = ["README.md"] if os.path.exists(os.path.join(root, "README.md")) else []
    found += sorted(os.path.relpath(p, root)
                    for p in glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    return [p.replace(os.sep, "/") for p in found]


def block_names(text: str, where: str) -> list[str]:
    """The names of the text's generated blocks; an unknown name or an unpaired marker is an error."""
    opened = None
    names = []
    for match in ANY_MARKER.finditer(text):
        closing, name = match.group(1) == "/", match.group(2)
        if name not in TABLES:
            raise ReportError(f"{where}: unknown generated block {name!r}; known: {', '.join(TABLES)}")
        if closing != (opened is not None) or (closing and name != opened):
            raise ReportError(f"{where}: marker {match.group(0).strip()!r} does not pair with "
                              + (f"<!-- generated:{opened} -->" if opened else "an opening marker"))
        opened = None if closing else name
        if not closing:
            names.append(name)
    if opened:
        raise ReportError(f"{where}: <!-- generated:{opened} --> has no <!-- /generated:{opened} -->")
    return names


def render_text(text: str, where: str, root: str, manifest: dict,
                plots: dict[str, Callable[[str], None]] | None = None) -> str:
    """The text with each generated block's content replaced by its table as rendered for the file `where`."""
    block_names(text, where)

    def replace(match) -> str:
        ctx = Context(root, manifest, where)
        body = "\n".join(TABLES[match.group("name")](ctx))
        if plots is not None:
            plots.update(ctx.plots)
        return f"<!-- generated:{match.group('name')} -->\n{body}\n<!-- /generated:{match.group('name')} -->"
    return MARKER.sub(replace, text)


def all_plots(root: str, manifest: dict) -> dict[str, Callable[[str], None]]:
    """Every plot any table links (as rendered for README.md: the plots are the same for every file)."""
    plots: dict[str, Callable[[str], None]] = {}
    for render in TABLES.values():
        ctx = Context(root, manifest, "README.md")
        render(ctx)
        plots.update(ctx.plots)
    return plots


def manifest_problems(root: str, manifest: dict) -> list[str]:
    problems = []
    for e in manifest["results"]:
        for path in e.get("files", []):
            if not os.path.exists(os.path.join(root, path)):
                problems.append(f"{MANIFEST}: {e['label']!r} lists {path}, which is missing")
        if e.get("kind", "learning") == "learning" and all(os.path.exists(os.path.join(root, p)) for p in e["files"]):
            reached = frames_reached(e, root)
            if e.get("frames_reached") != reached:
                problems.append(f"{MANIFEST}: {e['label']!r} says frames_reached {e.get('frames_reached')}, its files "
                                f"{reached}; publish it again")
    return problems


def stale(root: str = REPO) -> list[str]:
    """One line per stale generated block, missing linked plot or missing manifest file."""
    manifest = load_manifest(root)
    problems = manifest_problems(root, manifest)
    if problems:
        return problems
    for where in target_files(root):
        with open(os.path.join(root, where)) as f:
            text = f.read()
        try:
            plots: dict[str, Callable[[str], None]] = {}
            rendered = render_text(text, where, root, manifest, plots)
        except ReportError as e:
            problems.append(str(e))
            continue
        pairs = zip([m.group("name") for m in MARKER.finditer(text)], MARKER.finditer(text), MARKER.finditer(rendered))
        for name, old, new in pairs:
            if old.group(0) != new.group(0):
                problems.append(f"{where}: block {name!r} differs from what benchmarks/report.py renders; "
                                f"run {RENDER_COMMAND}")
        for path in sorted(plots):
            if not os.path.exists(os.path.join(root, path)):
                problems.append(f"{where}: a generated block links {path}, which is missing; run "
                                f"{RENDER_COMMAND} --plots")
    return problems


def render(root: str = REPO, with_plots: bool = False) -> list[str]:
    """Rewrites every generated block under `root`; returns the files changed (and plots drawn)."""
    manifest = load_manifest(root)
    problems = manifest_problems(root, manifest)
    if problems:
        raise ReportError("\n".join(problems))
    changed, plots = [], {}
    for where in target_files(root):
        path = os.path.join(root, where)
        with open(path) as f:
            text = f.read()
        rendered = render_text(text, where, root, manifest, plots)
        if rendered != text:
            with open(path + ".tmp", "w") as f:
                f.write(rendered)
            os.replace(path + ".tmp", path)
            changed.append(where)
    if with_plots:
        plots.update(all_plots(root, manifest))
        changed += draw_plots(plots, root)
    return changed


# ---------------------------------------------------------------------------------------------------
# publish

def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True, check=True).stdout.strip()


def code_commit() -> str:
    """HEAD of the code that made the run, '-dirty' where the tracked tree has changes."""
    head = _git("rev-parse", "HEAD")
    return head + ("-dirty" if _git("status", "--porcelain", "--untracked-files=no") else "")


def host_name() -> str:
    """The GPU's name where nvidia-smi finds one, else lscpu's CPU model name; with the CPU count."""
    cpu = None
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=30).stdout
        cpu = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name:")), None)
    except (OSError, subprocess.SubprocessError):
        pass
    cpu = f"{cpu or 'unknown CPU'}, {os.cpu_count()} CPUs"
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=30).stdout.strip()
            if out:
                return f"{out.splitlines()[0]} (GPU); {cpu}"
        except (OSError, subprocess.SubprocessError):
            pass
    return cpu


def operative_config(run_dir: str) -> dict[str, str]:
    """The agent, env family, game and seed a run directory's learner_operative_config.gin records."""
    try:
        with open(os.path.join(run_dir, "learner_operative_config.gin")) as f:
            text = f.read()
    except OSError:
        return {}
    macros = dict(re.findall(r"^(\w+) = (.+)$", text, re.MULTILINE))

    def value(pattern: str) -> str | None:
        match = re.search(pattern, text, re.MULTILINE)
        if not match:
            return None
        raw = match.group(1).strip()
        raw = macros.get(raw[1:], raw) if raw.startswith("%") else raw
        return raw.strip("'\"")
    # Runs saved before the learner's settings groups bound run_learner.agent and run_learner.seed.
    found = {"agent": value(r"^(?:training|run_learner)\.agent = @(\w+)Agent$"),
             "env": value(r"^create_envs\.factory = @create_(\w+)_envs$"),
             # Each family names its game by its own word: Football's scenario, DMLab's level, gym's env_id.
             "game": value(r"^create_\w+_envs\.(?:game|task|scenario|level|env_id) = (.+)$"),
             "seed": value(r"^(?:training|run_learner)\.seed = (\d+)$")}
    if found["agent"]:
        found["agent"] = found["agent"].lower()
    return {k: v for k, v in found.items() if v}


def publish(run_dirs: Sequence[str], label: str, root: str = REPO, title: str | None = None,
            command: str | None = None, status: str | None = None, **fields) -> dict:
    """Copies each run directory's episodes, segments and curve into benchmarks/results/learning/ as
    LABEL_seedN_* and adds or updates the label's manifest entry; returns the entry."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", label):
        raise ReportError(f"--label {label!r}: use letters, digits, '_', '.' and '-'")
    if status is not None and status not in STATUSES:
        raise ReportError(f"--status {status!r}: one of {', '.join(STATUSES)}")
    path = os.path.join(root, MANIFEST)
    manifest = load_manifest(root) if os.path.exists(path) else {"results": []}
    try:
        e = entry(manifest, label)
    except ReportError:
        e = {"label": label, "kind": "learning"}
        manifest["results"].append(e)
    found = {}
    seeds = {}
    for run in run_dirs:
        if not os.path.isfile(os.path.join(run, "episodes.csv")):
            raise ReportError(f"{run}: no episodes.csv (give a run directory)")
        config = operative_config(run)
        match = re.search(r"_seed(\d+)$", os.path.basename(os.path.normpath(run)))
        seed = int(match.group(1)) if match else int(config["seed"]) if "seed" in config else None
        if seed is None:
            raise ReportError(f"{run}: no seed in its name (NAME_seedN) or its learner_operative_config.gin")
        if seed in seeds:
            raise ReportError(f"{run} and {seeds[seed]} are both seed {seed}")
        seeds[seed] = run
        for key in ("agent", "env", "game"):
            found.setdefault(key, config.get(key))
    os.makedirs(os.path.join(root, LEARNING_DIR), exist_ok=True)
    files = set(e.get("files", []))
    for seed, run in sorted(seeds.items()):
        copy = os.path.join(root, LEARNING_DIR, f"{label}_seed{seed}_episodes.csv")
        copy_out(run, copy)
        timed, start = training_seconds(read_episodes(copy), read_segments(copy))
        write_csv(copy[:-len(".csv")] + "_curve.csv", curve(timed, WINDOW, start))
        for name in (copy, copy[:-len(".csv")] + "_curve.csv", copy[:-len("_episodes.csv")] + "_segments.json"):
            if os.path.exists(name):
                files.add(os.path.relpath(name, root).replace(os.sep, "/"))
    e["title"] = title or e.get("title") or label
    for key in ("agent", "env", "game"):
        e[key] = fields.get(key) or e.get(key) or found.get(key)
    if fields.get("config") or "config" not in e:
        e["config"] = fields.get("config") or (f"seed/configs/{e['env']}_{e['agent']}.gin"
                                               if e.get("env") and e.get("agent") else None)
    if fields.get("bindings") or "bindings" not in e:
        e["bindings"] = list(fields.get("bindings") or [])
    e["command"] = e.get("command", []) + ([command] if command and command not in e.get("command", []) else [])
    e["commit"] = code_commit()
    host = fields.get("host") or host_name()
    if e.get("host") and e["host"] != host and not set(e.get("seeds", [])) <= set(seeds):
        host = f"{e['host']}; seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, sorted(seeds)))}: {host}"
    e["host"] = host
    for seed in seeds:
        e.setdefault("seed_commits", {})[str(seed)] = {"published": e["commit"]}
    e["shared"] = fields.get("shared") or e.get("shared")
    if fields.get("suite"):
        e["suite"] = fields["suite"]
    e["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    e["seeds"] = sorted(set(e.get("seeds", [])) | set(seeds))
    e["files"] = sorted(files)
    e["frames_reached"] = frames_reached(e, root)
    e["frames"] = fields.get("frames") or e.get("frames") or max(e["frames_reached"].values())
    e["status"] = status or e.get("status") or "probe"
    threshold = fields.get("target")
    if threshold is None and not e.get("target"):
        threshold = THRESHOLDS.get((e.get("game"), e.get("agent")), THRESHOLDS.get(e.get("game")))
    if threshold is not None:
        e["target"] = {"return": threshold}
    e.setdefault("target", None)
    e.setdefault("experiment", None)
    save_manifest(manifest, root)
    return e


# ---------------------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    parser.add_argument("--root", default=REPO,
                        help="the tree with README.md, docs/ and benchmarks/results/ (default: this repository)")
    commands = parser.add_subparsers(dest="command")
    render_parser = commands.add_parser("render", help="rewrite every generated block (the default)")
    render_parser.add_argument("--plots", action="store_true",
                               help=f"also redraw the plots the tables link, into {PLOTS_DIR}/")
    commands.add_parser("check", help="exit 1 naming each generated block that differs from what render writes")
    commands.add_parser("plots",
                        help=f"only redraw the plots the tables link, into {PLOTS_DIR}/ (render --plots does both)")
    pub = commands.add_parser("publish",
                              help="copy runs' episodes into benchmarks/results/learning/ and add their manifest entry")
    pub.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories (runs/learning/LABEL_seedN)")
    pub.add_argument("--label", required=True, help="names the copies LABEL_seedN_* and the manifest entry")
    pub.add_argument("--title")
    pub.add_argument("--command", dest="run_command", help="the command that trained the runs, as run")
    pub.add_argument("--status", choices=STATUSES)
    pub.add_argument("--agent")
    pub.add_argument("--env", help="env family: atari, classic, mujoco")
    pub.add_argument("--game")
    pub.add_argument("--config", help="the gin file, e.g. seed/configs/atari_vtrace.gin")
    pub.add_argument("--gin_bindings", action="append", default=[], help="bindings beyond the config (repeatable)")
    pub.add_argument("--frames", type=int, help="the budget (default: the entry's, else the frames reached)")
    pub.add_argument("--target", type=float, help="the return the runs aim at (default: learning.py's for the game)")
    pub.add_argument("--host", help="default: nvidia-smi's GPU name, else lscpu's model name")
    pub.add_argument("--shared", help="what shared the machine")
    pub.add_argument("--suite", help="the suite run this game belongs to (its Atari-5 table groups by it)")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    try:
        if args.command == "check":
            problems = stale(root)
            for line in problems:
                print(line)
            return 1 if problems else 0
        if args.command == "plots":
            for path in draw_plots(all_plots(root, load_manifest(root)), root):
                print(f"wrote {path}")
            return 0
        if args.command == "publish":
            e = publish(args.runs, args.label, root, args.title, args.run_command, args.status, agent=args.agent,
                        env=args.env, game=args.game, config=args.config, bindings=args.gin_bindings,
                        frames=args.frames, target=args.target, host=args.host, shared=args.shared,
                        suite=args.suite)
            print(json.dumps({"published": e["label"], "seeds": e["seeds"], "frames_reached": e["frames_reached"],
                              "commit": e["commit"], "host": e["host"]}))
            return 0
        for path in render(root, with_plots=getattr(args, "plots", False)):
            print(f"wrote {path}")
        return 0
    except ReportError as e:
        print(str(e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
