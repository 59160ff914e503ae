"""The components, transport, XLA and update-loop benchmarks run end to end and report every measurement they promise.
Speeds are printed, never asserted: only that each part ran and measured something."""
import json
import subprocess
import sys

import pytest

from tests.network_hosts import loss_unavailable, unavailable
from tests.processes import REPO_ROOT, child_env


def run_benchmark(script: str, *args: str, timeout_s: float = 600):
    """Runs benchmarks/<script> with `args`; returns its JSON lines, failing on a non-zero exit."""
    out = subprocess.run([sys.executable, f"benchmarks/{script}", *args], cwd=REPO_ROOT, env=child_env(),
                         capture_output=True, text=True, timeout=timeout_s)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_transport_benchmark_reports_raw_floor_grpc_only_and_system_per_round_and_medians():
    records = run_benchmark("transport.py", "--actors", "1", "--envs", "2", "--rounds", "2", "--seconds", "1",
                            "--settle_seconds", "0.6", "--warmup_seconds", "1", timeout_s=300)
    rounds = {}
    for r in records:
        rounds.setdefault(r["benchmark"], []).append(r)
    assert {name: len(found) for name, found in rounds.items()} == {
        "raw_env_stepping": 2, "grpc_floor": 1, "grpc_only": 2, "transport": 2, "transport_summary": 1}
    for name in ("raw_env_stepping", "grpc_only", "transport"):
        assert [r["round"] for r in rounds[name]] == [0, 1]
        assert all(r["agent_steps_per_s"] > 0 for r in rounds[name]), rounds[name]
    floor = rounds["grpc_floor"][0]
    assert floor["client_cpu_ms"] > 0 < floor["server_cpu_ms"]
    assert 0 < floor["ceiling_ratio"] < 1
    for raw, grpc_only, system in zip(rounds["raw_env_stepping"], rounds["grpc_only"], rounds["transport"]):
        assert system["ratio_to_raw"] == system["agent_steps_per_s"] / raw["agent_steps_per_s"]
        assert system["ratio_to_grpc_only"] == system["agent_steps_per_s"] / grpc_only["agent_steps_per_s"]
    summary = rounds["transport_summary"][0]
    ratios = sorted(r["ratio_to_raw"] for r in rounds["transport"])
    assert (summary["ratio_to_raw_min"], summary["ratio_to_raw_max"]) == (ratios[0], ratios[-1])
    assert summary["ratio_to_raw_median"] == sum(ratios) / 2
    assert summary["ratio_to_raw_mean"] == pytest.approx(sum(ratios) / 2)
    # Two rounds: the sample standard deviation is |a - b| / sqrt(2), its standard error |a - b| / 2.
    assert summary["ratio_to_raw_sem"] == pytest.approx((ratios[1] - ratios[0]) / 2)


def test_transport_benchmark_refuses_zero_rounds():
    result = subprocess.run([sys.executable, "benchmarks/transport.py", "--rounds", "0"], cwd=REPO_ROOT,
                            env=child_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "--rounds must be at least 1, got 0" in result.stderr


def test_xla_benchmark_compares_every_component_both_ways():
    records = run_benchmark("xla.py", "--seconds", "0.2", "--rounds", "1", "--batches", "8", "--r2d2_batch", "1")
    components = {"vtrace_training_step", "policy_batch_8", "r2d2_training_step"}
    measured = {(r["component"], r["mode"]) for r in records if "per_s" in r and r["per_s"] > 0}
    assert measured == {(c, mode) for c in components for mode in ("default", "xla")}
    summaries = {r["component"]: r for r in records if r.get("summary")}
    assert set(summaries) == components
    assert all(s["xla_over_default_median"] > 0 for s in summaries.values())


def test_update_loop_benchmark_times_the_python_and_the_in_graph_loop_side_by_side():
    records = run_benchmark("update_loop.py", "--seconds", "0.2", "--rounds", "2",
                            "--gin_bindings", "VTraceAgent.batch_size=4", "--gin_bindings", "VTraceAgent.minibatches=2")
    modes = ("python", "graph")  # --xla adds 'graph_xla' (a minute more here)
    assert [r["mode"] for r in records if "updates_per_s" in r] == list(modes) * 2
    summaries = {r["mode"]: r for r in records if r.get("summary")}
    assert set(summaries) == set(modes) and summaries["python"]["over_python_median"] == 1.0
    assert all(s["updates_per_s_median"] > 0 and s["gradient_steps_per_update"] == 4 for s in summaries.values())


def test_components_benchmark_reports_every_component_and_a_bound_below_each():
    records = run_benchmark("components.py", "--envs", "16", "--seconds", "0.2")
    by_component = {}
    for r in records:
        by_component.setdefault(r["component"], []).append(r)
    assert set(by_component) == {"env_stepping", "inference", "replay_memory", "training_step", "bound"}
    memory = by_component["replay_memory"][0]  # atari_vtrace.gin: 21 single 84x84 frames and 3 of history, and more
    assert 24 * 84 * 84 < memory["unroll_bytes"] < 4 * 21 * 84 * 84  # less than the stacks would take
    assert memory["unrolls_per_gib"] == pytest.approx(2 ** 30 / memory["unroll_bytes"])
    inference = {r["batch"]: r["observations_per_s"] for r in by_component["inference"]}
    assert set(inference) == {1, 8, 16, 32, 64, 128} and min(inference.values()) > 0
    for r in by_component["inference"]:  # the network call is timed inside the path, so it is the smaller
        assert 0 < r["policy_call_ms_per_batch"] < r["path_ms_per_batch"] and r["outside_policy_us_per_env"] > 0
    bound = by_component["bound"][0]
    assert bound["inference_batch"] == 16  # the learner serves every one of the 16 envs in one batch
    slowest = min(by_component["env_stepping"][0]["agent_steps_per_s"], inference[16],
                  by_component["training_step"][0]["agent_steps_per_s"])
    assert 0 < bound["agent_steps_per_s"] < slowest  # the parts share one machine


def test_load_generator_streams_256_actors_at_one_learner_and_none_hangs():
    (record,) = run_benchmark("load.py", "--streams", "256", "--seconds", "4", timeout_s=180)
    assert (record["answered"], record["refused"], record["hung"], record["failed"]) == (256, 0, 0, 0)
    assert record["env_steps_per_s"] > 0 and 0 < record["round_trip_ms_p50"] <= record["round_trip_ms_p99"]
    assert 1 < record["inference_batch_mean"] <= 8  # classic_vtrace.gin's inference.batch_size
    # Beyond the learner's stream limit the rest are refused, not left waiting.
    (record,) = run_benchmark("load.py", "--streams", "80", "--seconds", "4", "--gin_bindings",
                              "service.max_actors=64", timeout_s=180)
    assert (record["answered"], record["refused"], record["hung"], record["failed"]) == (64, 16, 0, 0)


def test_training_goes_on_over_a_link_of_50_ms_with_jitter_at_the_rate_its_round_trips_allow(tmp_path):
    clean, delayed, learner = run_benchmark("delay_proxy.py", "--compare", "--seconds", "6", "--logdir",
                                            str(tmp_path), timeout_s=300)
    assert (clean["link"], delayed["link"], delayed["delay_ms"], delayed["jitter_ms"]) == ("clean", "delayed", 50, 10)
    assert learner["updates"] > 0 and delayed["env_steps_per_s"] > 0  # it trains on, the delayed actor slower
    assert delayed["round_trip_ms_p50"] >= 80  # about twice the one-way delay, each way jittered
    assert clean["round_trip_ms_p50"] < 40 and clean["env_steps_per_s"] > 2 * delayed["env_steps_per_s"]


def test_learning_benchmark_trains_a_real_run_to_its_frame_budget_and_writes_its_curve(tmp_path):
    records = run_benchmark("learning.py", "classic", "vtrace", "--actors", "1", "--envs", "4", "--frames", "8000",
                            "--seeds", "3", "--label", "smoke", "--out", str(tmp_path), "--window", "5",
                            "--threshold", "5", "--report_interval_s", "1", timeout_s=300)
    summary = [r for r in records if r.get("benchmark") == "learning"]
    assert [r["run"] for r in summary] == ["smoke_seed3"]
    assert summary[0]["budget_reached"] and summary[0]["trained_frames"] >= 8000
    assert 0 < summary[0]["final_frames"] and summary[0]["frames_to_threshold"] is not None
    assert any("env_frames" in r and "benchmark" not in r for r in records), "no progress line"
    # The copies a result commits sit beside the run directory, and --plot reads them as it would the run.
    assert ((tmp_path / "smoke_seed3_episodes.csv").read_text()
            == (tmp_path / "smoke_seed3" / "episodes.csv").read_text())
    assert json.loads((tmp_path / "smoke_seed3_segments.json").read_text())[0][1] is not None
    lines = (tmp_path / "smoke_seed3_episodes_curve.csv").read_text().splitlines()
    assert lines[0] == "env_frames,wall_s,mean_return_last_100"
    rows = [[float(x) for x in line.split(",")] for line in lines[1:]]
    assert len(rows) == summary[0]["episodes"] > 5
    assert all(a[0] <= b[0] and 0 <= a[1] <= b[1] for a, b in zip(rows, rows[1:]))  # frames and wall time rise
    assert (tmp_path / "smoke.png").stat().st_size > 0
    assert "training.seed = 3" in (tmp_path / "smoke_seed3" / "learner_operative_config.gin").read_text()
    assert "run_actor.seed = 3" in (tmp_path / "smoke_seed3" / "actor_operative_config.gin").read_text()

    # The same command again is refused; with --resume it goes on from the checkpoint to the new budget.
    again = subprocess.run([sys.executable, "benchmarks/learning.py", "classic", "vtrace", "--seeds", "3", "--label",
                            "smoke", "--out", str(tmp_path)], cwd=REPO_ROOT, env=child_env(), capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 2 and "--resume" in again.stderr, again.stderr[-2000:]
    budget = summary[0]["trained_frames"] + 8000  # the first invocation stops past its 8,000, between checks
    records = run_benchmark("learning.py", "classic", "vtrace", "--actors", "1", "--envs", "4", "--frames", str(budget),
                            "--seeds", "3", "--label", "smoke", "--out", str(tmp_path), "--window", "5",
                            "--report_interval_s", "1", "--resume", timeout_s=300)
    (resumed,) = [r for r in records if r.get("benchmark") == "learning"]
    assert resumed["invocations"] == 2 and resumed["budget_reached"] and resumed["trained_frames"] >= budget
    assert resumed["final_frames"] > summary[0]["final_frames"]
    assert resumed["episodes"] > summary[0]["episodes"]  # the first invocation's episodes are kept
    assert "resuming at" in (tmp_path / "smoke_seed3.log").read_text()
    assert len(json.loads((tmp_path / "smoke_seed3_segments.json").read_text())) == 2
    lines = (tmp_path / "smoke_seed3_episodes_curve.csv").read_text().splitlines()[1:]
    rows = [[float(x) for x in line.split(",")] for line in lines]
    assert all(a[0] <= b[0] and 0 <= a[1] <= b[1] for a, b in zip(rows, rows[1:]))


def test_learning_benchmark_refuses_to_train_over_a_committed_run_whose_run_directory_is_gone(tmp_path):
    (tmp_path / "smoke_seed3_episodes.csv").write_text(
        "env_frames,raw_return,clipped_return,length_frames,evaluation,time\n8480,0.0,0.0,524,0,1.0\n")
    for resume in ([], ["--resume"]):  # a tiny budget, so that a run it wrongly starts ends by itself
        out = subprocess.run([sys.executable, "benchmarks/learning.py", "classic", "vtrace", "--seeds", "3", "--label",
                              "smoke", "--out", str(tmp_path), "--actors", "1", "--frames", "1000", *resume],
                             cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=300)
        assert out.returncode == 2 and "smoke_seed3_episodes.csv" in out.stderr, out.stderr[-2000:]
        assert "run directory" in out.stderr and not (tmp_path / "smoke_seed3").exists()


def test_learning_benchmark_trains_a_suite_game_after_game_and_a_suite_refuses_a_game(tmp_path):
    records = run_benchmark("learning.py", "classic", "vtrace", "--suite", "CartPole-v1,Acrobot-v1", "--actors", "1",
                            "--envs", "2", "--frames", "1000", "--label", "suite", "--out", str(tmp_path),
                            "--window", "2", timeout_s=300)
    summary = [r for r in records if r.get("benchmark") == "learning"]
    assert [(r["run"], r["game"]) for r in summary] == [("suite_CartPole-v1_seed1", "CartPole-v1"),
                                                        ("suite_Acrobot-v1_seed1", "Acrobot-v1")]
    assert all(r["budget_reached"] for r in summary)
    assert "CartPole-v1" in (tmp_path / "suite_CartPole-v1_seed1" / "learner_operative_config.gin").read_text()
    assert "Acrobot-v1" in (tmp_path / "suite_Acrobot-v1_seed1" / "learner_operative_config.gin").read_text()
    bad = subprocess.run([sys.executable, "benchmarks/learning.py", "atari", "vtrace", "--suite", "atari5", "--game",
                          "Pong"], cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--suite names the games" in bad.stderr
    bad = subprocess.run([sys.executable, "benchmarks/learning.py", "atari", "vtrace", "--suite", "Pong, Pong"],
                         cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "name a suite (atari5) or distinct games" in bad.stderr


def test_the_atari5_summary_scores_the_seeds_mean_return_of_each_game():
    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    import atari5
    from learning import atari5_summary
    finals = {g: {f"{g}_seed1": atari5.RANDOM[g], f"{g}_seed2": atari5.HUMAN[g]} for g in atari5.GAMES}
    summary = atari5_summary(finals, 10_000_000)
    assert summary["human_normalized"] == {g: 50.0 for g in atari5.GAMES}  # halfway between random and human
    assert summary["atari5_score"] == round(51 ** sum(atari5.WEIGHTS.values()) - 1, 2)
    finals["Qbert"]["Qbert_seed2"] = None  # a seed that has not reached the budget yet
    assert atari5_summary(finals, 10_000_000)["atari5_score"] is None


def test_learning_benchmark_counts_only_the_time_its_invocations_trained():
    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    from learning import training_seconds
    # Two invocations, 100-200 and 1000-1100 (the second killed: no end written); an hour between.
    episodes = [(10, 1.0, 150.0), (20, 2.0, 190.0), (30, 3.0, 1050.0), (40, 4.0, 1080.0), (50, 5.0, None)]
    timed, start = training_seconds(episodes, [[100.0, 200.0], [1000.0, None]])
    assert start == 0.0
    assert [e[2] for e in timed] == [50.0, 90.0, 150.0, 180.0, None]
    assert [e[:2] for e in timed] == [e[:2] for e in episodes]
    # Runs from before segments were kept count from their first episode, as before.
    assert training_seconds(episodes, []) == (episodes, None)


def test_learning_benchmark_reads_existing_runs_returns_at_frame_marks_and_the_first_crossing(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    # Episodes every 100k frames, 100 s apart; returns rise by 1 each: -21, -20, ...
    rows = [f"{(i + 1) * 100_000},{i - 21}.0,{i - 21}.0,4000,0,{1000 + 100 * i}" for i in range(60)]
    rows.insert(5, "550000,99.0,1.0,4000,1,1500")  # an evaluation env's episode: not in the curve
    (run / "episodes.csv").write_text("env_frames,raw_return,clipped_return,length_frames,evaluation,time\n"
                                      + "\n".join(rows) + "\n")
    records = run_benchmark("learning.py", "--plot", str(run), "--out", str(tmp_path / "out"), "--window", "3",
                            "--label", "existing")
    (summary,) = records
    # Episode i ends at (i + 1) x 100k frames with return i - 21: by 2.5M frames the last 3 returned
    # 1, 2, 3; by 5M, 26, 27, 28.
    assert summary["return_at_2.5M"] == 2.0 and summary["return_at_5M"] == 27.0
    assert summary["return_at_10M"] is None  # the run never got there
    # The 3-episode mean first reaches +18 at i = 40 (returns 17, 18, 19): 4.1M frames, 4,000 s after
    # the first episode.
    assert ((summary["threshold"], summary["frames_to_threshold"], summary["wall_s_to_threshold"])
            == (18.0, 4_100_000, 4000.0))
    assert summary["episodes"] == 60  # the evaluation episode is left out
    assert (tmp_path / "out" / "run_curve.csv").exists() and (tmp_path / "out" / "existing.png").exists()
    # A copy of episodes.csv reads the same; the run takes the file's name.
    (tmp_path / "copy_episodes.csv").write_text((run / "episodes.csv").read_text())
    (copied,) = run_benchmark("learning.py", "--plot", str(tmp_path / "copy_episodes.csv"), "--out",
                              str(tmp_path / "out"), "--window", "3", "--label", "copied")
    assert copied["run"] == "copy_episodes" and copied["frames_to_threshold"] == 4_100_000
    # With the run's segments copied beside it, wall times count from the invocation's start (0 s),
    # not from the first episode (1,000 s).
    (tmp_path / "copy_segments.json").write_text("[[0.0, 7000.0]]")
    (timed,) = run_benchmark("learning.py", "--plot", str(tmp_path / "copy_episodes.csv"), "--out",
                             str(tmp_path / "out"), "--window", "3", "--label", "copied")
    assert timed["wall_s_to_threshold"] == 5000.0
    run_benchmark("learning.py", "--plot", str(tmp_path / "copy_episodes.csv"), "--out", str(tmp_path / "out"),
                  "--label", "by_time", "--x", "time")
    assert (tmp_path / "out" / "by_time.png").stat().st_size > 0


def test_chaos_run_survives_killed_actors_a_killed_learner_a_stopped_actor_and_network_faults(tmp_path):
    """The short soak: CartPole V-trace under seed-launch with an actor SIGKILLed every 4 s, the learner
    SIGKILLed every 25 s and an actor SIGSTOPped past the idle timeout; where namespace hosts can be made
    (root, nftables: the test command installs it), on three hosts with 2 % loss on one actor host and
    its link and the learner's cut in turn, each cut noticed within the keepalive bound (1 s + 2 s)."""
    network = not (unavailable() or loss_unavailable())
    faults = ["--network_faults", "--partition_every_s", "22", "--partition_s", "8", "--keepalive_s", "1",
              "--keepalive_timeout_s", "2", "--minutes", "1.6"] if network else ["--minutes", "1"]
    (record,) = run_benchmark("chaos.py", "--config", "classic_vtrace.gin", "--actors", "2" if network else "3",
                              "--envs", "2", "--actor_kill_every_s", "4", "--learner_kill_every_s", "25",
                              "--idle_timeout_s", "5", "--checkpoint_interval_s", "2", "--logdir", str(tmp_path),
                              "--sample_every_s", "3", "--warmup_s", "6", *faults, timeout_s=600)
    assert record["learner_kills"] >= 2 and record["learner_restarts"] == record["learner_kills"]
    assert record["actor_kills"] >= 10 and record["actor_restarts"] >= record["actor_kills"] - 1
    assert record["streams_lost"] >= 1 and record["idle_streams_closed"] >= 1
    for kill in record["kills"]:  # each resume started at the checkpoint the kill found, or a later one
        assert kill["lost_at_most_since_checkpoint"], kill
    assert record["readable_checkpoint"] and record["episodes_after_last_kill"] > 0
    assert record["env_frames_stepped"] > 0 and record["frames_trained"] > 0
    assert record["exit_codes"] == [0] * (3 if network else 2)
    # The learner's resources were sampled in each of its processes; those past the warm-up are summarised.
    samples = record["resource_samples"]
    assert len({s["pid"] for s in samples}) >= 2  # one per learner process
    assert all(s["rss_mb"] > 50 and s["threads"] > 1 for s in samples if s["age_s"] >= 6)  # TensorFlow is up
    resources = record["resources"]
    assert resources["samples"] == sum(s["age_s"] >= 6 for s in samples) > 0
    assert resources["fds"]["min"] <= resources["fds"]["median"] <= resources["fds"]["max"]
    assert isinstance(resources["flat"], bool) and resources["processes_with_growth"] >= 1
    assert record["network_faults"] is network
    if network:
        assert record["packets_dropped"] > 0
        cuts = [c for c in record["partitions"] if not c.get("cut_short_by_the_end")]
        assert [c["host"] for c in cuts][:2] == ["actor1", "learner"], record["partitions"]
        for cut in cuts:  # the learner noticed the silence within the bound and had every stream back after
            assert cut["connected_before"] == 4 and cut["dropped_after_s"] is not None, cut
            assert cut["dropped_after_s"] <= 6 and cut["back_after_s"] is not None, cut


def test_replay_mixes_benchmark_measures_each_mix_beside_the_default(tmp_path):
    records = run_benchmark("replay_mixes.py", "--env", "classic", "--actors", "1", "--envs", "4", "--mixes",
                            "elite_strata", "--seconds", "35", "--warmup_s", "3", "--logdir", str(tmp_path),
                            "--gin_bindings", "reporting.progress_interval_s=1",
                            "--gin_bindings", "VTraceAgent.min_replay_unrolls=8", timeout_s=300)
    assert [r["mix"] for r in records] == ["default", "elite_strata"]
    default, elite = records
    assert default["env_frames_ratio_to_default"] == 1.0 and default["updates_ratio_to_default"] == 1.0
    assert elite["env_frames_per_s"] > 0 and elite["updates_per_s"] > 0
    assert elite["env_frames_ratio_to_default"] == round(elite["env_frames_per_s"] / default["env_frames_per_s"], 3)
    assert default["replayed_kl_mu_pi"] is None and elite["replayed_kl_mu_pi"] >= 0
    assert default["replayed_kl_by_updates"] == {} and all(
        int(b) % 50 == 0 and kl >= 0 for b, kl in elite["replayed_kl_by_updates"].items())
    assert elite["replayed_kl_by_updates"], "no update bin with replayed data"
    metrics = elite["source_metrics"]
    assert metrics["data/share_elite"] == 0.5 and metrics["data/elite_distance"] >= 0 and metrics["data/elite_rho"] > 0


def test_replay_ring_tells_picks_by_sample_count_from_picks_by_distance(tmp_path):
    """The ring model runs the real UnrollMix: uniform replays each unroll about once per ring lifetime
    (so about 1 - 1/e of its picks are first replays once the ring is full); the least-sampled elite
    strategy takes mostly unreplayed unrolls whatever the distances; 'lowest' takes younger unrolls
    only where distance grows with age."""
    out = tmp_path / "ring.json"
    records = run_benchmark("replay_ring.py", "--updates", "600", "--mixes", "uniform", "elite_lowest",
                            "elite_lowest_least_sampled", "--out", str(out), timeout_s=120)
    got = {(r["mix"], r["model"]): r for r in records}
    assert len(got) == 6 and json.loads(out.read_text())["results"] == records
    for model in ("independent", "age"):
        assert 0.55 < got["uniform", model]["first_replays"] < 0.72
        assert got["elite_lowest_least_sampled", model]["first_replays"] > got["uniform", model]["first_replays"] + 0.1
    assert got["elite_lowest", "age"]["age_updates"] < got["elite_lowest", "independent"]["age_updates"] - 5
    refused = subprocess.run([sys.executable, "benchmarks/replay_ring.py", "--updates", "0"], cwd=REPO_ROOT,
                             env=child_env(), capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--updates must be positive" in refused.stderr


def test_replay_mixes_prints_learning_runs_that_the_shell_reads_back_as_each_mixs_arguments():
    out = subprocess.run([sys.executable, "benchmarks/replay_mixes.py", "--learning_runs", "--game", "Breakout",
                          "--seed", "2", "--mixes", "uniform", "clear"], cwd=REPO_ROOT, env=child_env(),
                         capture_output=True, text=True, timeout=120, check=True).stdout
    # learn.sh reads each line with bash's eval; NUL-separated words come back unambiguous.
    words = subprocess.run(["bash", "-c", 'while IFS= read -r l; do eval "a=($l)"; printf "%s\\0" "${a[@]}"; '
                            'printf "\\n\\0"; done'], input=out, capture_output=True, text=True, check=True).stdout
    runs = [line.strip("\0").split("\0") for line in words.split("\n\0") if line]
    half = "VTraceAgent.sources={'queue': 0.5, 'uniform': 0.5}"
    common = ["--seeds", "2"]
    assert runs == [common + ["--label", "mix_breakout_uniform", "--game", "Breakout", "--gin_bindings", half],
                    common + ["--label", "mix_breakout_clear", "--game", "Breakout", "--gin_bindings", half,
                              "--gin_bindings", "VTraceLoss.policy_cloning_cost=0.01",
                              "--gin_bindings", "VTraceLoss.value_cloning_cost=0.005"]]


def test_replay_mixes_table_reads_each_runs_curve_and_each_mixs_throughput_measured_on_the_game(tmp_path):
    def write_curve(name, returns):  # one episode per 100k frames
        rows = "".join(f"{(i + 1) * 100_000},{i}.0,{r}\n" for i, r in enumerate(returns))
        (tmp_path / f"{name}_episodes_curve.csv").write_text("env_frames,wall_s,mean_return_last_100\n" + rows)

    write_curve("pong_K_seed1", [-20.0] * 99 + [18.5] * 2)  # reaches +18 at its 100th episode: 10.0M frames
    write_curve("mix_pong_uniform_seed2", [10.0] * 30 + [19.0] * 30)  # 100 episodes never pass: no crossing
    write_curve("mix_pong_uniform_seed1", [-21.0] * 24 + [18.0] * 80)
    write_curve("mix_breakout_uniform_seed1", [200.0] * 120)  # another game's: not in Pong's table
    pong = {"env": "atari", "game": None, "results": [{"mix": "default", "env_frames_ratio_to_default": 1.0},
                                                      {"mix": "uniform", "env_frames_ratio_to_default": 0.58}]}
    breakout = {"env": "atari", "game": "Breakout",
                "results": [{"mix": "uniform", "env_frames_ratio_to_default": 0.61}]}
    (tmp_path / "pong.json").write_text(json.dumps(pong))
    (tmp_path / "breakout.json").write_text(json.dumps(breakout))
    out = subprocess.run([sys.executable, "benchmarks/replay_mixes.py", "--table", "Pong", "--curves_dir",
                          str(tmp_path), "--throughput", str(tmp_path / "breakout.json"), str(tmp_path / "pong.json")],
                         cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120, check=True).stdout
    header, rule, *rows = out.splitlines()
    assert header.split(" | ")[2:6] == ["+18 first at", "at 2.5M", "at 5M", "at 10M"] and rule.count("|---") == 8
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    # The default first, then mixes by seed; the Pong measurement wins over Breakout's for Pong's table.
    assert cells == [
        ["default", "pong_K_seed1", "10.00M", "-20.0", "-20.0", "18.5", "18.5 (10.10M)", "1.00"],
        ["uniform", "mix_pong_uniform_seed1", "10.00M", "18.0", "18.0", "18.0", "18.0 (10.40M)", "0.58"],
        ["uniform", "mix_pong_uniform_seed2", "-", "10.0", "19.0", "-", "19.0 (6.00M)", "0.58"],
        # Two seeds or more: the median crossing over those that crossed, the mean where all got that far.
        ["uniform", "2 seeds: median, mean", "10.00M (10.00-10.00M), 1 of 2 reached", "14.0", "18.5", "-", "18.5", ""]]
    marked = subprocess.run([sys.executable, "benchmarks/replay_mixes.py", "--table", "Pong", "--curves_dir",
                             str(tmp_path), "--marks", "300k", "2.4M"], cwd=REPO_ROOT, env=child_env(),
                            capture_output=True, text=True, timeout=120, check=True).stdout.splitlines()
    # A mark reads the mean as it stood there: at 2.4M seed 1 still had its -21s, at 2.5M its first 18.
    assert marked[0].split(" | ")[3:5] == ["at 300k", "at 2.4M"] and "| -21.0 | -21.0 |" in marked[3]
    bad_mark = subprocess.run([sys.executable, "benchmarks/replay_mixes.py", "--table", "Pong", "--marks", "5X"],
                              cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120)
    assert bad_mark.returncode == 2 and "--marks 5X: not a frame count" in bad_mark.stderr
    breakout_table = subprocess.run([sys.executable, "benchmarks/replay_mixes.py", "--table", "Breakout",
                                     "--curves_dir", str(tmp_path), "--throughput", str(tmp_path / "pong.json")],
                                    cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120,
                                    check=True).stdout
    # Measured only on Pong, the ratio names the game it comes from.
    assert breakout_table.splitlines()[2].endswith("| 200.0 (12.00M) | 0.58 (Pong) |")
    refused = subprocess.run([sys.executable, "benchmarks/replay_mixes.py", "--table", "Qbert"], cwd=REPO_ROOT,
                             env=child_env(), capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--table Qbert: no threshold known" in refused.stderr


def test_gpu_learn_sh_brings_back_four_parts_a_call_and_the_rest_with_more(tmp_path):
    # A device call brings back at most 64 MiB: learn.sh must hold back what does not fit, not lose it.
    back = tmp_path / "back"
    back.mkdir()
    for i in range(6):
        (back / f"runs.tgz.{i:02d}").write_bytes(bytes([i]) * 10)
    calls = []
    for n in range(3):
        out = tmp_path / f"out{n}"
        out.mkdir()
        result = subprocess.run(["bash", "benchmarks/gpu_offline/learn.sh", "--more"], cwd=REPO_ROOT,
                                env={**child_env(), "OUT": str(out), "BACK_PARTS": str(back)},
                                capture_output=True, text=True, timeout=60)
        calls.append((result.returncode, sorted(p.name for p in out.iterdir()), result.stdout + result.stderr))
    assert calls[0][:2] == (0, [f"runs.tgz.{i:02d}" for i in range(4)]) and "2 more part(s)" in calls[0][2]
    assert calls[1][:2] == (0, ["runs.tgz.04", "runs.tgz.05"]) and "every part is back" in calls[1][2]
    assert calls[2][:2] == (2, []) and "no parts left" in calls[2][2]


def test_gpu_unpack_sh_joins_parts_from_several_calls_and_names_a_missing_one(tmp_path):
    run = tmp_path / "made" / "mix_pong_uniform_seed1"
    (run / "checkpoints").mkdir(parents=True)
    (run / "episodes.csv").write_text("env_frames,return\n" + "".join(f"{i * 3000},-20\n" for i in range(1, 400)))
    (run / "checkpoints" / "ckpt-8.index").write_bytes(bytes(range(256)) * 40)
    archive = subprocess.run(["tar", "-C", str(run.parent), "-czf", "-", run.name], capture_output=True,
                             check=True).stdout
    third = len(archive) // 3 + 1
    first_call, second_call = tmp_path / "call1", tmp_path / "call2"
    first_call.mkdir(), second_call.mkdir()
    for i in range(3):   # parts 00 and 02 in one call's folder, 01 in the other's
        ((second_call if i == 1 else first_call) / f"runs.tgz.{i:02d}").write_bytes(archive[i * third:(i + 1) * third])

    def unpack(*folders):
        return subprocess.run(["bash", "benchmarks/gpu_offline/unpack.sh", *map(str, folders)], cwd=REPO_ROOT,
                              env={**child_env(), "DEST": str(tmp_path / "dest")}, capture_output=True,
                              text=True, timeout=60)

    missing = unpack(first_call)
    assert missing.returncode == 2 and "runs.tgz.01 is missing" in missing.stderr
    assert not (tmp_path / "dest" / run.name).exists()
    joined = unpack(first_call, second_call)
    assert joined.returncode == 0, joined.stderr
    assert "1197000 frames" in joined.stdout
    unpacked = tmp_path / "dest" / run.name
    assert (unpacked / "episodes.csv").read_text() == (run / "episodes.csv").read_text()
    assert (unpacked / "checkpoints" / "ckpt-8.index").read_bytes() == bytes(range(256)) * 40
