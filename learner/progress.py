"""What a run reports as it goes: the progress line with its ETA, LOGDIR/progress.jsonl, LOGDIR/episodes.csv
and TensorBoard scalars, from what the learner's parts provide: counters (monotone counts, whose
changes over a report's span give its rates) and metrics (values as they are now)."""
import collections
import json
import logging
import os
import time
from collections.abc import Callable, Iterable

import numpy as np
import tensorflow as tf

log = logging.getLogger(__name__)

class EpisodeLog:
    """LOGDIR/episodes.csv: one row per finished episode, appended across resumes."""

    def __init__(self, path: str):
        is_new = not os.path.exists(path)
        self._file = open(path, "a")
        if is_new:
            self._file.write("env_frames,raw_return,clipped_return,length_frames,evaluation,time\n")

    def write(self, env_frames: int, evaluation: bool, episode, length_frames: int, now: float) -> None:
        """`now` (Unix seconds) is when the row is written, at most one progress interval after
        the episode ended: learning curves over wall time read it."""
        self._file.write(f"{env_frames},{episode.raw_return},{episode.clipped_return},{length_frames},"
                         f"{int(evaluation)},{now:.1f}\n")

    def flush(self) -> None:
        self._file.flush()

    @staticmethod
    def last_env_frames(path: str) -> int:
        """The env frames of the last complete row (0 for none): where a resumed run's count goes on."""
        if not os.path.exists(path):
            return 0
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            lines = f.read().decode(errors="replace").split("\n")[:-1]  # the last may be half written
        for line in reversed(lines):
            first = line.split(",", 1)[0]
            if first.isdigit():
                return int(first)
        return 0


class TimeLeft:
    """Seconds left to the budget at the rate of the last `window_s` (5 minutes): one line's rate swings
    with every checkpoint and replay refill and would make the estimate jump by hours, and the first
    lines' warm-up would make it far too long."""

    def __init__(self, interval_s: float, now: float, frames: int, window_s: float = 300.0):
        self._points = collections.deque([(now, frames)], maxlen=max(2, int(window_s / interval_s) + 1))

    def advance(self, now: float, frames: int, total_frames: int) -> float | None:
        self._points.append((now, frames))
        (start_s, start_frames) = self._points[0]
        rate = (frames - start_frames) / max(now - start_s, 1e-9)
        return (total_frames - frames) / rate if rate > 0 and frames < total_frames else None


class RateWindow:
    """The span and counter changes a progress line's rates are taken over: since the last
    report, or since the one before when that is under `min_span_s` (the last line at
    shutdown comes early, and a rate over a fraction of a second is mostly noise)."""

    def __init__(self, min_span_s: float, now: float, counts: dict[str, int]):
        self.min_span_s = min_span_s
        self._points = collections.deque([(now, counts)], maxlen=2)  # the last two reports

    def advance(self, now: float, counts: dict[str, int]) -> tuple[float, dict[str, int]]:
        start_time, start_counts = self._points[-1]
        if now - start_time < self.min_span_s and len(self._points) == 2:
            start_time, start_counts = self._points[0]
        self._points.append((now, counts))
        return max(now - start_time, 1e-9), {k: c - start_counts.get(k, 0) for k, c in counts.items()}


class Progress:
    """The progress line, LOGDIR/progress.jsonl, LOGDIR/episodes.csv and TensorBoard scalars.

    `counters` give monotone counts by name; among them 'frames' (the budget's), 'env_steps',
    'updates', 'skipped_updates', 'inference/batches' and 'inference/batched_envs',
    'training/batch_wait_us' and 'training/update_us' make the line's rates. `metrics` give values
    as they are (the data source's, the service's, the last update's). `episodes()` hands over the
    episodes finished since the last call as (env steps then, evaluation?, FinishedEpisode);
    `describe()` is the data source's part of the line."""

    # Counts the record carries as they are, besides the rates made of them.
    _RECORDED = ("frames", "updates", "skipped_updates")

    def __init__(self, logdir: str, *, total_frames: int, frames_per_step: int, interval_s: float,
                 counters: Iterable[Callable[[], dict[str, int]]], metrics: Iterable[Callable[[], dict[str, float]]],
                 episodes: Callable[[], Iterable[tuple]], describe: Callable[[], str]):
        self.writer = tf.summary.create_file_writer(os.path.join(logdir, "summaries"))
        self.episodes_csv = EpisodeLog(os.path.join(logdir, "episodes.csv"))
        self.jsonl = open(os.path.join(logdir, "progress.jsonl"), "a")
        self.total_frames, self.frames_per_step = total_frames, frames_per_step
        self._counters, self._metrics = list(counters), list(metrics)
        self._episodes, self._describe = episodes, describe
        self.returns = collections.deque(maxlen=100)
        self.evaluation_returns = collections.deque(maxlen=100)
        self.num_episodes = 0
        self.tracker = None  # a WandbTracker when reporting.wandb_project is set
        counts = self._counts()
        self._window = RateWindow(interval_s / 2, time.monotonic(), counts)
        self._time_left = TimeLeft(interval_s, time.monotonic(), counts["frames"])

    def _counts(self) -> dict[str, int]:
        return {name: value for counters in self._counters for name, value in counters().items()}

    def report(self) -> str:
        """Writes every output once and returns the progress line."""
        counts = self._counts()
        frames = counts["frames"]
        span_s, new = self._window.advance(time.monotonic(), counts)
        # The training thread over the window: ms per update, and the share of its time spent waiting
        # for data; left out of a window it spent inside one long update.
        wait_us, update_us = new["training/batch_wait_us"], new["training/update_us"]
        training = {"training/batch_wait_share": wait_us / (wait_us + update_us)} if wait_us + update_us else {}
        if new["updates"] + new["skipped_updates"]:
            training["training/update_ms"] = update_us / 1000 / (new["updates"] + new["skipped_updates"])
        record = {"time": time.time(), "frames": frames, "total_frames": self.total_frames,
                  "frames_per_second": new["frames"] / span_s,
                  "seconds_left": self._time_left.advance(time.monotonic(), frames, self.total_frames),
                  "inference_batch_size": new["inference/batched_envs"] / max(new["inference/batches"], 1),
                  **training, **{k: counts[k] for k in self._RECORDED if k != "frames"},
                  "env_frames": counts["env_steps"] * self.frames_per_step}
        for metrics in self._metrics:
            record.update(metrics())
        with self.writer.as_default(step=frames):
            self._drain_episodes()
            for name, value in record.items():
                if name not in ("time", "total_frames", "env_frames", "seconds_left", *self._RECORDED):
                    tf.summary.scalar(name, value)
        self.writer.flush()
        record["episodes"] = self.num_episodes
        record["mean_return_last_100"] = float(np.mean(self.returns)) if self.returns else None
        if self.evaluation_returns:
            record["mean_evaluation_return_last_100"] = float(np.mean(self.evaluation_returns))
        self.jsonl.write(json.dumps(record) + "\n")
        self.jsonl.flush()
        if self.tracker is not None:
            self.tracker.log(record)
        return format_progress(record, len(self.returns), self._describe())

    def _drain_episodes(self) -> None:
        now = time.time()
        for env_steps, evaluation, episode in self._episodes():
            length_frames = episode.length * self.frames_per_step
            self.episodes_csv.write(env_steps * self.frames_per_step, evaluation, episode, length_frames, now)
            prefix = "evaluation_episode" if evaluation else "episode"
            tf.summary.scalar(f"{prefix}/raw_return", episode.raw_return)
            tf.summary.scalar(f"{prefix}/clipped_return", episode.clipped_return)
            tf.summary.scalar(f"{prefix}/length_frames", length_frames)
            if evaluation:
                self.evaluation_returns.append(episode.raw_return)
            else:
                self.num_episodes += 1
                self.returns.append(episode.raw_return)
        self.episodes_csv.flush()


def format_duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m{int(seconds % 60):02d}s"


def format_progress(record, num_returns: int, data: str) -> str:
    def mean(name):
        return "n/a" if record.get(name) is None else f"{record[name]:.1f}"

    frames, total, rate, seconds_left = (record["frames"], record["total_frames"], record["frames_per_second"],
                                         record.get("seconds_left"))
    left = f"{format_duration(seconds_left)} left" if seconds_left is not None and frames < total else "n/a left"
    losses = " ".join(f"{k[5:]} {v:+.3f}" for k, v in record.items() if k.startswith("loss/") and k != "loss/total")
    evaluation = (f" | eval return {mean('mean_evaluation_return_last_100')}"
                  if "mean_evaluation_return_last_100" in record else "")
    return (f"frames {frames:,} ({100 * frames / max(total, 1):.1f} % of {total:,}; {rate:,.0f}/s, {left}) | "
            f"episodes {record['episodes']} | "
            f"return(last {num_returns}) {mean('mean_return_last_100')}{evaluation} | "
            f"loss {losses or 'n/a (waiting for data)'} | "
            f"inference batch {record['inference_batch_size']:.1f} | {data}")
