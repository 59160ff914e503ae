"""A learning run, interval by interval: the table the experiment records use to say *when* a run
learnt, collapsed or plateaued, which a curve of the last-100 mean blurs.

    .venv/bin/python benchmarks/intervals.py runs/learning/a5c_Phoenix_seed1 --every 1M
    .venv/bin/python benchmarks/intervals.py benchmarks/results/learning/football_3v1_centred_seed1_episodes.csv \\
        --every 100k --above 1.0

Per interval of env frames: the episodes that ended in it (training episodes only, not evaluation),
their mean raw return and length in frames, and with `--above X` the share of them whose return was
above X (Football's goals under the checkpoint reward: a return above 1). From a run directory it also
reads the learner's progress.jsonl, and adds the mean over that interval's progress lines of the
policy's entropy, frames/s and the baseline loss (a published copy, RUN_episodes.csv, has no progress
log, so those columns are left out). Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import collections
import csv
import os
import statistics
import sys
from collections.abc import Sequence

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
from benchmarks.end_to_end import read_jsonl  # noqa: E402
from benchmarks.report import fmt_budget  # noqa: E402

PROGRESS_COLUMNS = (("entropy", "loss/entropy", -1.0, "{:.2f}"), ("frames/s", "frames_per_second", 1.0, "{:,.0f}"),
                    ("baseline loss", "loss/baseline", 1.0, "{:.3f}"))


def parse_frames(text: str) -> int:
    """'1M', '100k', '250000' -> env frames."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    try:
        value = float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"--every takes env frames like 1M or 100k, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--every must be at least one frame, not {text!r}")
    return int(value)


def episode_rows(path: str) -> list[dict]:
    """The training episodes of a run's episodes.csv (or a published RUN_episodes.csv)."""
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("evaluation", "0") in ("0", "")]


def progress_rows(run_dir: str) -> list[dict]:
    """The run's progress lines, the last one left out while the learner is still writing it."""
    return read_jsonl(os.path.join(run_dir, "progress.jsonl"))


def intervals(episodes: Sequence[dict], progress: Sequence[dict], every: int,
              above: float | None = None) -> tuple[list[str], list[list[str]]]:
    """The table's header and rows, an interval of `every` env frames per row."""
    by_interval: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    for r in episodes:
        by_interval[int(r["env_frames"]) // every].append((float(r["raw_return"]), float(r["length_frames"])))
    metrics: dict[int, dict[str, list[float]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for p in progress:
        if not p.get("updates"):
            continue  # before the first update: no loss yet, and frames/s counts start-up
        for name, key, sign, _ in PROGRESS_COLUMNS:
            if key in p and p.get("frames") is not None:
                metrics[int(p["frames"]) // every][name].append(sign * float(p[key]))
    shown = [c for c in PROGRESS_COLUMNS if any(m.get(c[0]) for m in metrics.values())]
    header = ["frames", "episodes", "mean return", "mean length (frames)"]
    header += [f"return above {above:g}"] if above is not None else []
    header += [name for name, *_ in shown]
    rows = []
    for i in sorted(by_interval):
        returns = [r for r, _ in by_interval[i]]
        row = [f"{fmt_budget(i * every) if i else 0}-{fmt_budget((i + 1) * every)}", f"{len(returns):,}",
               f"{statistics.fmean(returns):,.2f}", f"{statistics.fmean(n for _, n in by_interval[i]):,.0f}"]
        if above is not None:
            row.append(f"{100.0 * sum(r > above for r in returns) / len(returns):.1f} %")
        for name, _, _, fmt in shown:
            values = metrics[i].get(name)
            row.append(fmt.format(statistics.fmean(values)) if values else "-")
        rows.append(row)
    return header, rows


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a run directory (with episodes.csv) or a published RUN_episodes.csv")
    parser.add_argument("--every", type=parse_frames, default=parse_frames("1M"),
                        help="the interval in env frames, like 1M or 100k (default 1M)")
    parser.add_argument("--above", type=float, default=None,
                        help="also give the share of episodes whose return was above this")
    args = parser.parse_args(argv)
    if os.path.isdir(args.run):
        episodes_path, progress = os.path.join(args.run, "episodes.csv"), progress_rows(args.run)
    else:
        episodes_path, progress = args.run, []
    if not os.path.exists(episodes_path):
        parser.error(f"no episodes at {episodes_path}: give a run directory (it holds episodes.csv) "
                     "or a published RUN_episodes.csv")
    episodes = episode_rows(episodes_path)
    if not episodes:
        parser.error(f"{episodes_path} holds no training episodes yet")
    print(markdown(*intervals(episodes, progress, args.every, args.above)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
