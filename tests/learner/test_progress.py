import json
from types import SimpleNamespace

import pytest

from learner.progress import Progress, RateWindow


def test_rates_cover_the_span_since_the_last_report():
    window = RateWindow(min_span_s=2.5, now=100.0, counts={"frames": 0, "updates": 0})
    assert window.advance(105.0, {"frames": 500, "updates": 10}) == (5.0, {"frames": 500, "updates": 10})
    assert window.advance(110.0, {"frames": 1500, "updates": 30}) == (5.0, {"frames": 1000, "updates": 20})


def test_a_report_soon_after_the_last_reaches_back_to_the_one_before():
    # The last line at shutdown: one update landed 0.3 s after the previous report.
    window = RateWindow(min_span_s=2.5, now=100.0, counts={"frames": 0})
    window.advance(105.0, {"frames": 500})
    span_s, new = window.advance(105.3, {"frames": 600})
    assert span_s == pytest.approx(5.3) and new == {"frames": 600}


def test_the_first_report_uses_what_it_has_however_short():
    window = RateWindow(min_span_s=2.5, now=100.0, counts={"frames": 0})
    span_s, new = window.advance(100.5, {"frames": 40})
    assert span_s == pytest.approx(0.5) and new == {"frames": 40}


def test_progress_line_says_how_far_and_how_long_is_left():
    from learner.progress import format_progress

    record = {"frames": 2_500_000, "total_frames": 10_000_000, "frames_per_second": 2_500.0, "seconds_left": 3000.0,
              "episodes": 7,
              "mean_return_last_100": -3.25, "inference_batch_size": 15.9, "loss/policy": -0.01, "loss/total": 1.0}
    line = format_progress(record, 7, "queue 3/64")
    assert line.startswith("frames 2,500,000 (25.0 % of 10,000,000; 2,500/s, 50m00s left) | episodes 7 | "
                           "return(last 7) -3.2 | loss policy -0.010 | inference batch 15.9 | queue 3/64")
    record.update(frames_per_second=0.0, seconds_left=None)
    assert "(25.0 % of 10,000,000; 0/s, n/a left)" in format_progress(record, 7, "")
    record.update(frames=0, total_frames=200_000_000, frames_per_second=4_000.0, seconds_left=50_000.0)
    assert "4,000/s, 13h53m left" in format_progress(record, 7, "")


def test_time_left_follows_the_rate_of_the_last_minutes_not_of_one_line():
    from learner.progress import TimeLeft

    left = TimeLeft(interval_s=5.0, now=0.0, frames=0, window_s=60.0)
    for second in range(5, 65, 5):  # 1,000 frames/s for a minute, but the last line at 100/s
        assert left.advance(second, 1_000 * second if second < 60 else 59_500, 1_000_000) is not None
    assert abs(left.advance(65.0, 64_500, 1_000_000) - (1_000_000 - 64_500) / 1_000) < 60
    # the start's slow warm-up leaves the window: the estimate then follows the steady rate
    for second in range(70, 200, 5):
        seconds_left = left.advance(second, 64_500 + 2_000 * (second - 65), 1_000_000)
    assert abs(seconds_left - (1_000_000 - 64_500 - 2_000 * 130) / 2_000) < 1
    assert left.advance(205.0, 1_000_000, 1_000_000) is None  # at the budget: nothing left


def test_a_resumed_run_reads_its_frames_stepped_from_the_last_complete_row(tmp_path):
    from learner.progress import EpisodeLog

    path = tmp_path / "episodes.csv"
    assert EpisodeLog.last_env_frames(str(path)) == 0
    path.write_text("env_frames,raw_return,clipped_return,length_frames,evaluation,time\n"
                    "400,1.0,1.0,100,0,1.0\n1200,2.0,2.0,100,0,2.0\n15")  # the last row is half written
    assert EpisodeLog.last_env_frames(str(path)) == 1200


def test_the_record_is_made_of_what_the_parts_provide(tmp_path):
    """Rates from the counters' changes over the span, values from the metrics as they are, episodes
    taken once."""
    counts = {"frames": 0, "updates": 0, "skipped_updates": 0, "training/batch_wait_us": 0,
              "training/update_us": 0, "inference/batches": 0, "inference/batched_envs": 0, "env_steps": 0}
    episode = SimpleNamespace(raw_return=-20.0, clipped_return=-20.0, length=100)
    finished = [(250, False, episode), (300, True, episode)]

    def take_episodes():
        taken = list(finished)
        finished.clear()
        return taken

    progress = Progress(str(tmp_path), total_frames=10_000, frames_per_step=4, interval_s=1e-3,
                        counters=[lambda: dict(counts)], metrics=[lambda: {"unroll_queue/depth": 3},
                                                                   lambda: {"loss/total": 0.5}],
                        episodes=take_episodes, describe=lambda: "queue 3/64")
    counts.update({"frames": 2_000, "updates": 3, "skipped_updates": 1, "training/batch_wait_us": 1_000,
                   "training/update_us": 3_000, "inference/batches": 10, "inference/batched_envs": 160,
                   "env_steps": 500})
    line = progress.report()
    record = json.loads((tmp_path / "progress.jsonl").read_text().splitlines()[-1])
    assert record["frames"] == 2_000 and record["updates"] == 3 and record["skipped_updates"] == 1
    assert record["env_frames"] == 2_000 and record["inference_batch_size"] == 16.0
    assert record["training/batch_wait_share"] == 0.25 and record["training/update_ms"] == 0.75
    assert record["unroll_queue/depth"] == 3 and record["loss/total"] == 0.5 and record["frames_per_second"] > 0
    assert record["episodes"] == 1 and record["mean_return_last_100"] == -20.0
    assert record["mean_evaluation_return_last_100"] == -20.0 and line.endswith("| queue 3/64")
    rows = (tmp_path / "episodes.csv").read_text().splitlines()
    assert [row.split(",")[:2] for row in rows[1:]] == [["1000", "-20.0"], ["1200", "-20.0"]]
    progress.report()  # nothing new: no episode counted twice, no update rates without updates
    record = json.loads((tmp_path / "progress.jsonl").read_text().splitlines()[-1])
    assert record["episodes"] == 1 and "training/update_ms" not in record
