"""benchmarks/report.py: the results tables in README.md and docs/ are what the result files and the
manifest render to, every manifest file exists and every result file has a manifest entry, publish adds
a run with its commit and host, and an unknown block name is refused with the known ones named."""
import csv
import json
import subprocess
import sys

import pytest

from tests.processes import REPO_ROOT, child_env

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import report  # noqa: E402


def test_committed_generated_blocks_are_what_report_renders():
    # Every block in README.md and docs/**/*.md (a file without blocks has nothing to check), every
    # plot they link, and the manifest's files.
    assert report.stale(str(REPO_ROOT)) == []


def test_every_manifest_file_exists_and_every_result_file_belongs_to_an_entry():
    manifest = report.load_manifest(str(REPO_ROOT))
    listed = ({path for e in manifest["results"] for path in e["files"]}
              | {f["file"] for f in manifest.get("figures", [])})
    assert sorted(p for p in listed if not (REPO_ROOT / p).exists()) == []
    labels = [e["label"] for e in manifest["results"]]
    assert len(labels) == len(set(labels))
    # Every file there that git would commit (run directories and their logs are git-ignored).
    found = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                            "benchmarks/results"], capture_output=True, text=True, check=True).stdout.split("\0")
    unlisted = sorted(p for p in found if p and p != report.MANIFEST and p not in listed and (REPO_ROOT / p).exists())
    assert unlisted == [], "result files without a manifest entry (publish them)"
    for e in manifest["results"]:
        assert e["status"] in report.STATUSES, e["label"]
        assert e["commit"], e["label"]
        if e.get("kind", "learning") == "learning":
            assert sorted(report.episodes_files(e, str(REPO_ROOT))) == e["seeds"], e["label"]


def _fake_run(directory, seed, frames_per_episode, returns):
    """A run directory as the learner leaves one: episodes.csv (evaluation rows left out of curves),
    learning_segments.json and learner_operative_config.gin."""
    directory.mkdir()
    start = 1_800_000_000.0
    with open(directory / "episodes.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_frames", "raw_return", "clipped_return", "length_frames", "evaluation", "time"])
        for i, value in enumerate(returns):
            writer.writerow([(i + 1) * frames_per_episode, value, max(-1, min(1, value)), frames_per_episode, 0,
                             start + i])
        writer.writerow([len(returns) * frames_per_episode, 99.0, 1.0, frames_per_episode, 1, start + len(returns)])
    (directory / "learning_segments.json").write_text(json.dumps([[start - 5, start + len(returns)]]))
    (directory / "learner_operative_config.gin").write_text(
        "GAME = 'CartPole-v1'\ncreate_envs.factory = @create_classic_envs\ncreate_classic_envs.game = %GAME\n"
        f"training.agent = @VTraceAgent\ntraining.seed = {seed}\n")


def test_publish_copies_runs_and_adds_their_manifest_entry_with_commit_and_host(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    _fake_run(runs / "cart_seed1", 1, 500, [10.0 + i for i in range(150)])
    _fake_run(runs / "a_run_named_by_run_local", 2, 400, [20.0 + i for i in range(120)])  # seed from its config
    root = tmp_path / "tree"
    out = subprocess.run([sys.executable, "benchmarks/report.py", "--root", str(root), "publish",
                          str(runs / "cart_seed1"), str(runs / "a_run_named_by_run_local"), "--label",
                          "cartpole_probe", "--title", "CartPole probe", "--command",
                          "benchmarks/learning.py classic vtrace --seeds 1 2", "--status", "probe"],
                         cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    manifest = json.loads((root / report.MANIFEST).read_text())
    (e,) = manifest["results"]
    assert (e["label"], e["title"], e["status"], e["seeds"]) == ("cartpole_probe", "CartPole probe", "probe", [1, 2])
    assert (e["agent"], e["env"], e["game"], e["config"]) == ("vtrace", "classic", "CartPole-v1",
                                                              "seed/configs/classic_vtrace.gin")
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert e["commit"] in (head, head + "-dirty")
    assert e["host"]
    assert e["frames_reached"] == {"1": 75_000, "2": 48_000}
    assert e["command"] == ["benchmarks/learning.py classic vtrace --seeds 1 2"]
    assert e["target"] == {"return": 195.0}
    learning = "benchmarks/results/learning"
    assert e["files"] == sorted(f"{learning}/cartpole_probe_seed{s}_{kind}" for s in (1, 2)
                                for kind in ("episodes.csv", "episodes_curve.csv", "segments.json"))
    for path in e["files"]:
        assert (root / path).is_file(), path
    with open(root / learning / "cartpole_probe_seed1_episodes_curve.csv") as f:
        curve = list(csv.reader(f))
    assert curve[0] == ["env_frames", "wall_s", "mean_return_last_100"]
    assert len(curve) == 1 + 150 and float(curve[-1][2]) == pytest.approx(sum(10.0 + i for i in range(50, 150)) / 100)
    assert float(curve[1][1]) == 5.0  # wall seconds from the segment's start
    # The tree checks clean (no blocks yet, every file there), and a second publish updates the entry.
    assert report.stale(str(root)) == []
    _fake_run(runs / "cart_seed3", 3, 500, [1.0] * 10)
    again = report.publish([str(runs / "cart_seed3")], "cartpole_probe", str(root))
    assert again["seeds"] == [1, 2, 3] and again["title"] == "CartPole probe"
    assert len(json.loads((root / report.MANIFEST).read_text())["results"]) == 1
    (root / learning / "cartpole_probe_seed3_segments.json").unlink()
    assert report.stale(str(root)) == [f"{report.MANIFEST}: 'cartpole_probe' lists "
                                       f"{learning}/cartpole_probe_seed3_segments.json, which is missing"]


def test_targets_read_as_the_games_score_them():
    assert report.fmt_target({"game": "Pong", "target": {"return": 18}}) == "+18"
    assert report.fmt_target({"game": "Breakout", "target": {"return": 100}}) == "100"
    assert report.fmt_target({"game": "Phoenix", "target": {"return": 6060.0}}) == "6,060"
    # the same goal level as the Atari-5 table gives it, not rounded to another number
    assert report.fmt_target({"game": "BattleZone", "target": {"return": 30832.7}}) == "30,832.7"
    assert report.fmt_target({"game": "DoubleDunk", "target": {"return": -16.8}}) == "-16.8"


def test_an_unknown_block_name_fails_naming_the_known_ones(tmp_path):
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / report.MANIFEST).write_text(json.dumps({"results": []}))
    (tmp_path / "README.md").write_text("# x\n<!-- generated:headlines -->\n<!-- /generated:headlines -->\n")
    out = subprocess.run([sys.executable, "benchmarks/report.py", "--root", str(tmp_path), "render"], cwd=REPO_ROOT,
                         env=child_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "README.md: unknown generated block 'headlines'; known: " + ", ".join(report.TABLES) in out.stderr
    assert all(name in out.stderr
               for name in ("headline", "support", "vtrace", "replay_mixes_breakout", "gpu", "speed"))
    check = subprocess.run([sys.executable, "benchmarks/report.py", "--root", str(tmp_path), "check"], cwd=REPO_ROOT,
                           env=child_env(), capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and "unknown generated block 'headlines'" in check.stdout


def test_render_replaces_only_block_contents_and_check_names_a_stale_block(tmp_path):
    root = tmp_path
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "benchmarks" / "results").mkdir(parents=True)
    (root / report.MANIFEST).write_text(json.dumps({"results": []}))
    (root / "seed" / "configs").mkdir(parents=True)
    (root / "seed" / "configs" / "atari_vtrace.gin").write_text("")
    page = "before\n<!-- generated:support -->\nold\n<!-- /generated:support -->\nafter\n"
    (root / "docs" / "guide" / "results.md").write_text(page)
    assert report.stale(str(root)) == ["docs/guide/results.md: block 'support' differs from what benchmarks/report.py "
                                       f"renders; run {report.RENDER_COMMAND}"]
    assert report.render(str(root)) == ["docs/guide/results.md"]
    text = (root / "docs" / "guide" / "results.md").read_text()
    assert (text.startswith("before\n<!-- generated:support -->\n| agent | env |")
            and text.endswith("<!-- /generated:support -->\nafter\n"))
    assert "| V-trace | Atari | `atari_vtrace.gin` | no | - |" in text
    assert report.render(str(root)) == [] and report.stale(str(root)) == []
    (root / "docs" / "guide" / "results.md").write_text(page.replace("<!-- /generated:support -->\n", ""))
    with pytest.raises(report.ReportError, match="has no <!-- /generated:support -->"):
        report.render(str(root))


def test_support_draws_probe_curves_only_where_no_default_is_published(tmp_path):
    root = tmp_path / "tree"
    (root / "benchmarks" / "results").mkdir(parents=True)
    (root / report.MANIFEST).write_text(json.dumps({"results": []}))
    (root / "seed" / "configs").mkdir(parents=True)
    (root / "seed" / "configs" / "classic_vtrace.gin").write_text("")
    (root / "README.md").write_text("<!-- generated:support -->\n<!-- /generated:support -->\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    _fake_run(runs / "probe_seed1", 1, 500, [10.0] * 120)
    report.publish([str(runs / "probe_seed1")], "cart_probe", str(root), status="probe", host="test host")
    report.render(str(root))
    row = "| V-trace | classic control | `classic_vtrace.gin` | no | [CartPole-v1 (probe)]("
    assert row in (root / "README.md").read_text()
    # Two probes of one game are told apart by their labels.
    _fake_run(runs / "probe2_seed1", 1, 500, [20.0] * 120)
    report.publish([str(runs / "probe2_seed1")], "cart_probe2", str(root), status="probe", host="test host")
    report.render(str(root))
    text = (root / "README.md").read_text()
    assert "[cart_probe (probe)](" in text and "[cart_probe2 (probe)](" in text
    _fake_run(runs / "default_seed1", 1, 500, [200.0] * 120)
    report.publish([str(runs / "default_seed1")], "cart_default", str(root), status="default", host="test host")
    report.render(str(root))
    text = (root / "README.md").read_text()
    assert "| V-trace | classic control | `classic_vtrace.gin` | CartPole-v1 | [CartPole-v1](" in text
    assert "(probe)" not in text


def _publish_suite_a5(root):
    """Suite a5 in an empty results tree: BattleZone at the human score (HNS 100), the other four at
    random play (HNS 0), 100 episodes of 100k frames each, so every mark's 100-episode mean is that return."""
    import atari5
    (root / "benchmarks" / "results").mkdir(parents=True)
    (root / report.MANIFEST).write_text(json.dumps({"results": []}))
    for game in atari5.GAMES:
        value = atari5.HUMAN[game] if game == "BattleZone" else atari5.RANDOM[game]
        run = root / "runs" / f"a5_{game}_seed1"
        run.parent.mkdir(exist_ok=True)
        _fake_run(run, 1, 100_000, [value] * 100)
        report.publish([str(run)], f"a5_{game}", str(root), agent="vtrace", env="atari", game=game, suite="a5",
                       frames=10_000_000, host="test host")


def test_the_atari5_table_scores_a_published_suite_by_hand_computed_values(tmp_path):
    root = tmp_path
    (root / "seed" / "configs").mkdir(parents=True)
    (root / "seed" / "configs" / "atari_vtrace.gin").write_text("create_atari_envs.repeat_action_probability = 0.0\n")
    _publish_suite_a5(root)
    (root / "docs").mkdir()
    (root / "docs" / "atari5.md").write_text("<!-- generated:atari5 -->\n<!-- /generated:atari5 -->\n")
    report.render(str(root))
    text = (root / "docs" / "atari5.md").read_text()
    # BattleZone's goal level, 81.75 % of the way from random to human, is 30,832.7; its 100-episode
    # mean first counts at the 100th episode (10M frames), 99 + 5 s into training (2 min).
    assert "| BattleZone | 1 | 37,187.5 | 37,187.5 | 37,187.5 | 100.0 % | 30,832.7: 10.00M, 2 min | " \
        "2360 / 37187.5 | 0.38198 |" in text
    assert "| DoubleDunk | 1 | -18.6 | -18.6 | -18.6 | 0.0 % | -16.8: never | -18.6 / -16.4 | 0.06791 |" in text
    # 10 ** (0.38198 * log10(101)) - 1 = 101 ** 0.38198 - 1 = 4.83 at every mark; never 70.
    assert "| **Atari-5 score** |  | **4.8** | **4.8** | **4.8** |  | 70: never, in 10.00M per game |  |  |" in text
    assert "Dopamine IQN (sticky actions) 68" in text
    assert "*Suite `a5` (no sticky actions; `atari_vtrace.gin` as it stands): mean return" in text
    assert "[The suite's curves, a panel per game and the Atari-5 score](img/results/atari5_a5.png)" in text


def test_the_atari5_table_counts_the_games_cut_at_the_time_limit(tmp_path):
    import atari5
    root = tmp_path
    (root / "benchmarks" / "results").mkdir(parents=True)
    (root / report.MANIFEST).write_text(json.dumps({"results": []}))
    # DoubleDunk: 100 games of 100k frames to 10M, then 30 that ran the config's whole 108,000 frames (a
    # policy that stalls the game) after the 10M mark, which must not count them. BattleZone's 100 games
    # all ran the limit; 92 of them end by 10M frames, the mark.
    (root / "seed" / "configs").mkdir(parents=True)
    (root / "seed" / "configs" / "atari_vtrace.gin").write_text("create_atari_envs.max_episode_frames = 108_000\n")
    run = root / "runs" / "d5_DoubleDunk_seed1"
    run.parent.mkdir()
    _fake_run(run, 1, 100_000, [-18.0] * 100)
    with open(run / "episodes.csv", "a", newline="") as f:
        for i in range(30):
            csv.writer(f).writerow([10_000_000 + (i + 1) * 108_000, -2.0, -1.0, 108_000, 0, 1_800_000_200.0 + i])
    _fake_run(root / "runs" / "d5_BattleZone_seed1", 1, 108_000, [atari5.RANDOM["BattleZone"]] * 100)
    for game in ("DoubleDunk", "BattleZone"):
        report.publish([str(root / "runs" / f"d5_{game}_seed1")], f"d5_{game}", str(root), agent="vtrace",
                       env="atari", game=game, suite="d5", frames=10_000_000, host="test host",
                       config="seed/configs/atari_vtrace.gin")
    text = report.render_text("<!-- generated:atari5 -->\n<!-- /generated:atari5 -->\n", "docs/atari5.md",
                              str(root), report.load_manifest(str(root)), {})
    assert "| 0.0 % (92 of the last 100 games cut at the time limit) |" in text  # BattleZone
    assert "| DoubleDunk | 1 | -18.0 | -18.0 | -18.0 | 27.3 % |" in text  # none of its first 100 was cut
    summary = report.render_text("<!-- generated:atari5_summary -->\n<!-- /generated:atari5_summary -->\n",
                                 "README.md", str(root), report.load_manifest(str(root)), {})
    assert "Qbert); counts games cut at the time limit in BattleZone |" in summary
    # With a 150,000-frame limit in the config, BattleZone's 108,000-frame games were not cut.
    (root / "seed" / "configs" / "atari_vtrace.gin").write_text("create_atari_envs.max_episode_frames = 150_000\n")
    text = report.render_text("<!-- generated:atari5 -->\n<!-- /generated:atari5 -->\n", "docs/atari5.md",
                              str(root), report.load_manifest(str(root)), {})
    assert "cut at the time limit)" not in text


def test_the_atari5_summary_gives_each_suite_its_score_or_the_games_it_lacks(tmp_path):
    import atari5
    root = tmp_path
    # Suite a5 as above (Atari-5 score 4.8). Suite c5: BattleZone at random play, one seed; DoubleDunk
    # halfway to human, two seeds, and no other game.
    _publish_suite_a5(root)
    _fake_run(tmp_path / "runs" / "c5_BattleZone_seed1", 1, 100_000, [atari5.RANDOM["BattleZone"]] * 100)
    report.publish([str(tmp_path / "runs" / "c5_BattleZone_seed1")], "c5_BattleZone", str(root), agent="vtrace",
                   env="atari", game="BattleZone", suite="c5", frames=10_000_000, host="test host",
                   bindings=["VTraceLoss.center_advantages=True"])
    for seed in (1, 2):
        _fake_run(tmp_path / "runs" / f"c5_DoubleDunk_seed{seed}", seed, 100_000, [-17.5] * 100)
    report.publish([str(tmp_path / "runs" / f"c5_DoubleDunk_seed{seed}") for seed in (1, 2)], "c5_DoubleDunk",
                   str(root), agent="vtrace", env="atari", game="DoubleDunk", suite="c5", frames=10_000_000,
                   host="test host", bindings=["VTraceLoss.center_advantages=True"])
    (root / "README.md").write_text("<!-- generated:atari5_summary -->\n<!-- /generated:atari5_summary -->\n")
    report.render(str(root))
    text = (root / "README.md").read_text()
    assert "| `a5` | `atari_vtrace.gin` as it stands | 1 | **4.8** | DoubleDunk: 0.0 % | " \
        "[table and curves](docs/agents/vtrace.md#atari-5) |" in text
    assert "| `c5` | `atari_vtrace.gin` with `VTraceLoss.center_advantages=True` | 1-2 | " \
        "- (no 10M result for NameThisGame, Phoenix, Qbert) | BattleZone: 0.0 % |" in text


def test_the_atari5_table_times_a_suite_to_the_goal_and_draws_its_grid(tmp_path):
    import atari5
    root = tmp_path
    (root / "benchmarks" / "results").mkdir(parents=True)
    (root / report.MANIFEST).write_text(json.dumps({"results": []}))
    # Every game: 100 episodes at random play, then 100 at the human score, 50k frames each. The
    # 100-episode mean passes the goal level (81.75 % HNS) once 82 of the last 100 are human: the 182nd
    # episode, 9.10M frames, 181 + 5 s into training. All five at that level give the Atari-5 score 70,
    # so the suite reaches it at 9.10M frames per game, 5 x 186 s = 15.5 min summed.
    for game in atari5.GAMES:
        run = tmp_path / "runs" / f"b5_{game}_seed1"
        run.parent.mkdir(exist_ok=True)
        _fake_run(run, 1, 50_000, [atari5.RANDOM[game]] * 100 + [atari5.HUMAN[game]] * 100)
        report.publish([str(run)], f"b5_{game}", str(root), agent="vtrace", env="atari", game=game, suite="b5",
                       frames=10_000_000, host="test host",
                       bindings=["create_atari_envs.repeat_action_probability = 0.25"])
    plots = {}
    text = report.render_text("<!-- generated:atari5 -->\n<!-- /generated:atari5 -->\n", "docs/atari5.md",
                              str(root), report.load_manifest(str(root)), plots)
    plots = report.draw_plots(plots, str(root))
    assert "| Qbert | 1 | 163.9 | 163.9 | 13,455.0 | 100.0 % | 11,029.8: 9.10M, 3 min |" in text
    assert "| 70: **9.10M, 16 min** (training time summed over the games) |" in text
    assert "*Suite `b5` (sticky actions 0.25; `atari_vtrace.gin` with " \
        "`create_atari_envs.repeat_action_probability = 0.25`): mean return" in text
    assert "docs/img/results/atari5_b5.png" in plots
    assert (root / "docs" / "img" / "results" / "atari5_b5.png").stat().st_size > 10_000


def test_the_atari5_table_says_when_nothing_is_published(tmp_path):
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / report.MANIFEST).write_text(json.dumps({"results": []}))
    (tmp_path / "README.md").write_text("<!-- generated:atari5 -->\n<!-- /generated:atari5 -->\n")
    report.render(str(tmp_path))
    assert "No Atari-5 suite has been published yet" in (tmp_path / "README.md").read_text()


def test_the_soaks_table_renders_a_chaos_record_with_its_link_cuts_and_resource_growth(tmp_path):
    record = {"benchmark": "chaos", "config": "atari_vtrace.gin", "minutes": 60.0, "actors": 4, "envs_per_actor": 4,
              "network_faults": True, "actor_hosts": 2, "loss_percent": 2.0, "packets_dropped": 1234,
              "partitions": [{"host": "actor1", "at_s": 300.0, "cut_for_s": 60.0, "connected_before": 4,
                              "dropped_after_s": 38.5, "back_after_s": 3.0},
                             {"host": "learner", "at_s": 660.0, "cut_for_s": 60.0, "connected_before": 4,
                              "dropped_after_s": None, "back_after_s": None, "cut_short_by_the_end": True}],
              "actor_kills": 300, "learner_kills": 2, "learner_restarts": 2, "actor_restarts": 300,
              "actor_sigstopped_s": 30.0, "streams_lost": 290, "idle_streams_closed": 1, "frames_trained": 3_000_000,
              "kills": [{"frames_lost": 5120, "lost_at_most_since_checkpoint": True},
                        {"frames_lost": 0, "lost_at_most_since_checkpoint": False}],
              "readable_checkpoint": True,
              "resources": {"samples": 50, "processes_with_growth": 2, "flat": True,
                            "rss_mb": {"min": 900.0, "median": 950.5, "max": 990.0, "spread": 0.095, "growth": 0.021},
                            "fds": {"min": 20, "median": 24, "max": 28, "spread": 0.333, "growth": -0.04},
                            "threads": {"min": 30, "median": 31, "max": 33, "spread": 0.097, "growth": 0.0}}}
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "soak.json").write_text(json.dumps(record) + "\n")
    (tmp_path / report.MANIFEST).write_text(json.dumps({"results": [
        {"label": "soak_hour", "kind": "faults", "files": ["benchmarks/results/soak.json"]}]}))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "reliability.md").write_text("<!-- generated:soaks -->\n<!-- /generated:soaks -->\n")
    report.render(str(tmp_path))
    text = (tmp_path / "docs" / "reliability.md").read_text()
    assert "| `soak_hour` (`benchmarks/results/soak.json`) |" in text
    assert "2 actor hosts, 2 % loss each way on one (1,234 packets dropped), 2 link cuts" in text
    assert "frames lost 5,120, 0; NOT each at most since the checkpoint" in text
    assert "900-990 MB (median 950.5), growth +2.1%" in text and "20-28 (median 24), growth -4.0%" in text
    assert "| `soak_hour` | actor1's | 5.0 min | 60 s | 4 | 38.5 s | 3 s |" in text
    assert "| `soak_hour` | the learner's | 11.0 min | 60 s | 4 | never | the soak ended first |" in text


def test_operative_config_names_the_game_by_each_familys_word(tmp_path):
    """Football names its game a scenario, DMLab a level, gym an env_id: publish reads each."""
    for factory, line, game in (("football", "create_football_envs.scenario = 'academy_3_vs_1_with_keeper'",
                                 "academy_3_vs_1_with_keeper"),
                                ("dmlab", "create_dmlab_envs.level = %GAME", "explore_goal_locations_small"),
                                ("gym", "create_gym_envs.env_id = 'CartPole-v1'", "CartPole-v1")):
        run = tmp_path / factory
        run.mkdir()
        (run / "learner_operative_config.gin").write_text(
            f"GAME = 'explore_goal_locations_small'\ncreate_envs.factory = @create_{factory}_envs\n{line}\n"
            "training.agent = @VTraceAgent\n")
        assert report.operative_config(str(run))["game"] == game
        assert report.operative_config(str(run))["env"] == factory
