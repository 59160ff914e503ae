"""gcp/submit.py up to the boundary we cannot cross here (a GCP project):
the exact commands and the Vertex AI job spec that --dry_run prints."""
import json
import os
import subprocess
import sys

import pytest

from seed.launchers.launch import build_parser
from tests.processes import REPO_ROOT

BINDINGS = ["VTraceLoss.entropy_cost=0.02", "create_optimizer.learning_rate=0.0003"]
PARSE_GIN = """
import sys, actors.actor, learner.learner
from seed import gin_setup
args = sys.argv[1:]
gin_setup.parse([args[i + 1] for i, a in enumerate(args) if a == "--gin_config"],
                [args[i + 1] for i, a in enumerate(args) if a == "--gin_bindings"])
print("parsed")
"""


@pytest.fixture(autouse=True)
def _spec_files_in_tmp_path(tmp_path, monkeypatch):
    """A dry run keeps its job spec file for the printed command; keep it out of /tmp."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))


SUBMIT = [sys.executable, "gcp/submit.py", "--project", "my-project", "--region", "europe-west4",
          "--output", "gs://bucket/seed/run", "--tag", "t1"]


def dry_run(*args):
    result = subprocess.run([*SUBMIT, "--dry_run", *args],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    return result


def spec_and_commands(*args):
    result = dry_run(*args)
    assert result.returncode == 0, result.stderr
    commands, _, spec = result.stdout.partition("# job spec (")
    spec_path, _, spec = spec.partition("):\n")
    assert json.load(open(spec_path)) == json.loads(spec)  # the file gcloud gets is what was printed
    return json.loads(spec), [line[2:] for line in commands.splitlines()], spec_path


@pytest.mark.parametrize("config", ["atari_vtrace", "atari_r2d2"])
def test_job_spec_has_a_learner_pool_and_actor_replicas_with_every_binding(config):
    bindings = [a for b in BINDINGS for a in ("--gin_bindings", b)]
    spec, commands, spec_path = spec_and_commands("--config", config, "--actor_replicas", "6",
                                                  "--learner_accelerator", "NVIDIA_L4:2", *bindings)
    learner, actors = spec["workerPoolSpecs"]
    assert learner["replicaCount"] == 1 and actors["replicaCount"] == 6
    assert learner["machineSpec"]["acceleratorType"] == "NVIDIA_L4" and learner["machineSpec"]["acceleratorCount"] == 2
    assert "acceleratorType" not in actors["machineSpec"]
    assert learner["containerSpec"]["imageUri"] == "europe-west4-docker.pkg.dev/my-project/seed/seed:t1-gpu"
    assert actors["containerSpec"]["imageUri"] == "europe-west4-docker.pkg.dev/my-project/seed/seed:t1-cpu"
    for pool in (learner, actors):
        container = pool["containerSpec"]
        assert container["command"] == ["seed-launch"]
        launch_args = build_parser().parse_args(container["args"])  # seed-launch accepts them
        assert launch_args.gin_config == [f"{config}.gin"] and launch_args.logdir == "gs://bucket/seed/run"
        for binding in BINDINGS:
            assert binding in launch_args.gin_bindings
    assert build_parser().parse_args(actors["containerSpec"]["args"]).actors_per_replica == 8
    assert commands[-1] == ("gcloud ai custom-jobs create --project=my-project --region=europe-west4 "
                            f"--display-name=seed-{config.replace('_', '-')}-t1 --config={spec_path}")
    assert "docker build -f docker/Dockerfile --build-arg VARIANT=gpu -t " \
           "europe-west4-docker.pkg.dev/my-project/seed/seed:t1-gpu ." in commands
    # The learner's gin configuration, as the learner would parse it.
    result = subprocess.run([sys.executable, "-c", PARSE_GIN, *learner["containerSpec"]["args"]], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.strip().endswith("parsed"), result.stderr[-2000:]


def test_cpu_learner_builds_and_uses_only_the_cpu_image():
    spec, commands, _ = spec_and_commands("--learner_accelerator", "none")
    assert "acceleratorType" not in spec["workerPoolSpecs"][0]["machineSpec"]
    assert not any("VARIANT=gpu" in c for c in commands)


@pytest.mark.parametrize("args, message", [
    (["--config", "atari_dqn"], "unknown --config 'atari_dqn'"),
    (["--actor_replicas", "0"], "--actor_replicas must be at least 1"),
    (["--learner_accelerator", "NVIDIA_L4"], "TYPE:COUNT"),
])
def test_bad_arguments_are_refused_with_the_reason(args, message):
    result = dry_run(*args)
    assert result.returncode == 2 and message in result.stderr


def test_output_must_be_cloud_storage():
    result = subprocess.run([sys.executable, "gcp/submit.py", "--project", "p", "--output", "/tmp/x", "--dry_run"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--output must be a gs:// path" in result.stderr


# Stands in for gcloud and docker on PATH (no GCP project here): logs its command line, keeps a copy
# of the job spec it was given and fails when its arguments contain FAKE_FAIL.
FAKE_CLOUD_TOOL = """#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_DIR/calls"
for arg in "$@"; do
  case "$arg" in --config=*) cp "${arg#--config=}" "$FAKE_DIR/spec.json" ;; esac
done
if [ -n "$FAKE_FAIL" ]; then
  case " $* " in *" $FAKE_FAIL "*) exit 3 ;; esac
fi
"""


def submit_with_fake_tools(tmp_path, fail=""):
    fake_dir = tmp_path / "fake"
    fake_dir.mkdir()
    for tool in ("gcloud", "docker"):
        (fake_dir / tool).write_text(FAKE_CLOUD_TOOL)
        (fake_dir / tool).chmod(0o755)
    env = dict(os.environ, PATH=f"{fake_dir}{os.pathsep}{os.environ['PATH']}", FAKE_DIR=str(fake_dir), FAKE_FAIL=fail)
    result = subprocess.run(SUBMIT, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    calls = (fake_dir / "calls").read_text().splitlines() if (fake_dir / "calls").exists() else []
    return result, calls, fake_dir


def test_submit_runs_the_printed_commands_in_order_and_removes_its_spec_file(tmp_path):
    result, calls, fake_dir = submit_with_fake_tools(tmp_path)
    assert result.returncode == 0, result.stderr
    printed = [line[2:] for line in result.stdout.splitlines() if line.startswith("$ ")]
    assert calls == printed and len(calls) == 6  # configure-docker, build + push of both images, create
    assert calls[-1].startswith("gcloud ai custom-jobs create")
    spec = json.loads((fake_dir / "spec.json").read_text())  # what gcloud was given
    assert [pool["replicaCount"] for pool in spec["workerPoolSpecs"]] == [1, 4]
    assert not list(tmp_path.glob("seed_vertex_*")), "the job spec's temporary directory was left behind"


def test_submit_stops_at_the_first_failing_command(tmp_path):
    result, calls, _ = submit_with_fake_tools(tmp_path, fail="push")
    assert result.returncode == 3
    assert "`docker push` failed with exit code 3" in result.stderr
    assert calls[-1].startswith("docker push") and not any(c.startswith("gcloud ai") for c in calls)
    assert not list(tmp_path.glob("seed_vertex_*"))
