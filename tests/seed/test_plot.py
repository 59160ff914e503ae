"""seed-plot on real episodes.csv files: curves, groups, errors."""
import subprocess
import sys

import numpy as np
import pytest

from seed import plot
from tests.processes import REPO_ROOT

HEADER = "env_frames,raw_return,clipped_return,length_frames,evaluation,time\n"


def write_run(path, returns, frames_apart=1000, seconds_apart=10.0):
    path.mkdir(parents=True)
    rows = [f"{(i + 1) * frames_apart},{r},{r},100,0,{1000 + seconds_apart * i}" for i, r in enumerate(returns)]
    rows.append(f"{len(returns) * frames_apart},500,1,100,1,{2000}")  # evaluation: left out
    (path / "episodes.csv").write_text(HEADER + "\n".join(rows) + "\n" + "99000,3")  # a row being written
    return path


def seed_plot(*args):
    return subprocess.run([sys.executable, "-m", "seed.plot", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)


def test_curve_is_the_moving_mean_of_training_episodes_against_frames_and_wall_time(tmp_path):
    run = write_run(tmp_path / "a", [0, 2, 4, 6])
    rows = plot.curve(plot.read_episodes(str(run)), window=2)
    assert rows == [(1000, 0.0, 0.0), (2000, 10.0, 1.0), (3000, 20.0, 3.0), (4000, 30.0, 5.0)]


def test_a_group_is_drawn_as_mean_and_band_over_the_range_every_run_reached():
    a = ([0.0, 1.0, 2.0], [0.0, 2.0, 4.0])
    b = ([0.5, 1.5, 3.0], [1.0, 1.0, 1.0])
    grid, mean, low, high = plot.band([a, b], points=3)
    np.testing.assert_allclose(grid, [0.5, 1.25, 2.0])
    np.testing.assert_allclose(low, [1.0, 1.0, 1.0])
    np.testing.assert_allclose(high, [1.0, 2.5, 4.0])
    np.testing.assert_allclose(mean, [1.0, 1.75, 2.5])


def test_the_plotted_data_are_the_csv_curves_and_the_png_has_its_size(tmp_path):
    import struct

    a = write_run(tmp_path / "a", [-21, -10, 0, 10], frames_apart=250_000)
    b = write_run(tmp_path / "b", [-20, -15, -5, 5], frames_apart=250_000)
    out = str(tmp_path / "plot.png")
    groups = {"a": [plot.curve(plot.read_episodes(str(a)), 2)],
              "ab": [plot.curve(plot.read_episodes(str(r)), 2) for r in (a, b)]}
    plotted = plot.draw(out, groups, game="Pong", threshold=18)
    assert plotted["a"] == ([0.25, 0.5, 0.75, 1.0], [-21.0, -15.5, -5.0, 5.0])  # millions of frames; 2-episode means
    np.testing.assert_allclose(plotted["ab"][1][0], (-21.0 + -20.0) / 2)
    np.testing.assert_allclose(plotted["ab"][1][-1], (5.0 + 0.0) / 2)
    with open(out, "rb") as f:
        header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", header[16:24]) == (880, 550)


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_seed_plot_writes_groups_single_runs_and_references(tmp_path, suffix, magic):
    a = write_run(tmp_path / "a", [-21, -10, 0, 10])
    b = write_run(tmp_path / "b", [-20, -15, -5, 5])
    c = write_run(tmp_path / "c", [-21, -21, -20, -20])
    out = tmp_path / f"pong{suffix}"
    result = seed_plot(f"new={a},{b}", str(c), "--reference", "Pong", "--threshold", "18", "--window", "2",
                       "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(magic)
    result = seed_plot(str(a), "--x", "time", "--out", str(tmp_path / "time.png"))
    assert result.returncode == 0 and (tmp_path / "time.png").stat().st_size > 0


@pytest.mark.parametrize("args, message", [
    (["nowhere"], "no episodes.csv in nowhere"),
    (["RUN", "--out", "plot.pdf"], "use a .png or .svg file name"),
    (["RUN", "--reference", "Pacman"], "no reference curves for 'Pacman'; known: Pong, Breakout"),
    (["G="], "names no runs; write LABEL=RUN,RUN"),
    (["RUN", "--window", "0"], "--window must be positive"),
])
def test_bad_arguments_are_one_line_errors_that_name_the_fix(tmp_path, args, message):
    run = write_run(tmp_path / "run", [1, 2])
    argv = [str(run) if a == "RUN" else a for a in args]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "x.png")]
    result = seed_plot(*argv)
    assert result.returncode == 2 and message in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("seed-plot: error:")
