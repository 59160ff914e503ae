"""Weights & Biases tracking for real, offline: a CartPole run and its resume write W&B's own files,
which are read back here (W&B's offline .wandb log: a LevelDB-style record log of protobufs)."""
import glob
import json
import struct

import pytest

from seed.gin_setup import gin_settings
from tests.test_end_to_end import run_to_budget

wandb_pb = pytest.importorskip("wandb.proto.wandb_internal_pb2", reason="wandb is in the test extra")


def wandb_records(path):
    """Every record of one .wandb file: a 7-byte header, then 32 KiB blocks of chunks, each
    (crc32, length, kind) + data; kinds 1 full, 2 first, 3 middle, 4 last."""
    data = open(path, "rb").read()
    assert data[:4] == b":W&B", f"{path} is not a W&B log"
    pos, block, pending = 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a chunk header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            yield chunk
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            yield pending + chunk


def read_wandb_run(path):
    """(run id, config {key: value}, history rows [{key: value}]) of one offline run's log."""
    run_id, config, history = None, {}, []
    for data in wandb_records(path):
        record = wandb_pb.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run_id = record.run.run_id
            config.update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        elif kind == "config":
            config.update({item.key: json.loads(item.value_json) for item in record.config.update})
        elif kind == "history":
            history.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                            for item in record.history.item})
    return run_id, config, history


def test_gin_settings_reads_the_operative_config_with_continued_values():
    text = ("# Parameters for VTraceAgent:\n# ====\nVTraceAgent.batch_size = 8\n"
            "VTraceAgent.sources = \\\n    {'queue': 0.5, 'uniform': 0.5}\n\ntraining.agent = @VTraceAgent\n")
    assert gin_settings(text) == {"VTraceAgent.batch_size": "8",
                                  "VTraceAgent.sources": "\\ {'queue': 0.5, 'uniform': 0.5}",
                                  "training.agent": "@VTraceAgent"}


def test_a_run_and_its_resume_are_one_wandb_run_with_config_and_scalars(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb_cache"))
    logdir = tmp_path / "run"
    logdir.mkdir()
    bindings = ["reporting.wandb_project='seed-test'", "reporting.wandb_tags=['ci']",
                "reporting.progress_interval_s=1", "VTraceAgent.batch_size=4"]
    run_to_budget(logdir, "classic_vtrace.gin", 1, bindings + ["training.total_environment_frames=8000"],
                  ["run_actor.num_envs=4"], timeout_s=300)
    run_to_budget(logdir, "classic_vtrace.gin", 1, bindings + ["training.total_environment_frames=16000"],
                  ["run_actor.num_envs=4"], timeout_s=300)

    logs = sorted(glob.glob(str(logdir / "wandb" / "offline-run-*" / "run-*.wandb")))
    assert len(logs) == 2, logs  # one per learner start
    (first_id, config, first), (second_id, _, second) = (read_wandb_run(p) for p in logs)
    saved_id = (logdir / "wandb_run_id").read_text().strip()
    assert first_id == second_id == saved_id  # the resume continued the same W&B run
    assert config["VTraceAgent.batch_size"] == "4" and config["reporting.wandb_project"] == "'seed-test'"
    trained = [row for row in first + second if "loss/policy" in row]
    assert trained and all(isinstance(row["loss/policy"], float) and row["frames"] > 0 for row in trained)
    first_frames = [row["frames"] for row in first if "frames" in row]
    second_frames = [row["frames"] for row in second if "frames" in row]
    assert max(first_frames) >= 8000 and min(second_frames) >= max(first_frames) and max(second_frames) >= 16000
    assert any("mean_return_last_100" in row for row in first + second)


def test_wandb_that_cannot_start_a_run_stops_the_learner_at_start_in_one_line(tmp_path, monkeypatch):
    from tests.test_gin import run_role

    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "no_login"))  # no saved login either
    monkeypatch.setenv("WANDB_SILENT", "true")
    result = run_role("learner", "--gin_config", "classic_vtrace.gin", "--logdir", str(tmp_path),
                      "--gin_bindings", "reporting.wandb_project='seed-test'")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("seed-learner: error: W&B could not start run") and "WANDB_MODE=offline" in last
