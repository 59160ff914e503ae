"""benchmarks/intervals.py: a run's episodes and progress lines, interval by interval, as the experiment
records tabulate them."""
import csv
import json
import subprocess
import sys

from tests.processes import REPO_ROOT, child_env

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import intervals  # noqa: E402


def _run_dir(tmp_path):
    """Four training episodes (two in each 1,000-frame interval) and an evaluation one; three progress
    lines, the first before any update."""
    run = tmp_path / "run_seed1"
    run.mkdir()
    with open(run / "episodes.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_frames", "raw_return", "clipped_return", "length_frames", "evaluation", "time"])
        for frames, value, length, evaluation in ((400, 0.0, 100, 0), (900, 2.0, 300, 0), (1500, 1.0, 200, 0),
                                                  (1600, 50.0, 10, 1), (1900, 2.0, 400, 0)):
            writer.writerow([frames, value, value, length, evaluation, 0.0])
    lines = [{"frames": 0, "updates": 0, "frames_per_second": 0.0},
             {"frames": 500, "updates": 3, "frames_per_second": 100.0, "loss/entropy": -2.5, "loss/baseline": 0.1},
             {"frames": 1200, "updates": 6, "frames_per_second": 300.0, "loss/entropy": -1.5, "loss/baseline": 0.3}]
    (run / "progress.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run


def test_a_run_directory_gives_returns_lengths_shares_and_the_learner_metrics_per_interval(tmp_path):
    run = _run_dir(tmp_path)
    out = subprocess.run([sys.executable, "benchmarks/intervals.py", str(run), "--every", "1k", "--above", "1"],
                         cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "| frames | episodes | mean return | mean length (frames) | return above 1 | entropy | frames/s "
        "| baseline loss |",
        "|---|---|---|---|---|---|---|---|",
        "| 0-1k | 2 | 1.00 | 200 | 50.0 % | 2.50 | 100 | 0.100 |",
        "| 1k-2k | 2 | 1.50 | 300 | 50.0 % | 1.50 | 300 | 0.300 |",
    ]


def test_a_published_copy_has_no_progress_columns_and_bad_input_is_named():
    header, rows = intervals.intervals([{"env_frames": "2500000", "raw_return": "-12", "length_frames": "9000"}],
                                       [], intervals.parse_frames("1M"))
    assert header == ["frames", "episodes", "mean return", "mean length (frames)"]
    assert rows == [["2M-3M", "1", "-12.00", "9,000"]]
    bad = subprocess.run([sys.executable, "benchmarks/intervals.py", "nowhere", "--every", "1q"], cwd=REPO_ROOT,
                         env=child_env(), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--every takes env frames like 1M or 100k, not '1q'" in bad.stderr
    missing = subprocess.run([sys.executable, "benchmarks/intervals.py", "nowhere"], cwd=REPO_ROOT,
                             env=child_env(), capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no episodes at nowhere" in missing.stderr
