"""Starting real learner and actor processes on loopback for tests."""
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def child_env(temp_dir=None):
    """The environment for a child process; with `temp_dir`, its temporary files go to
    TEMP_DIR/tmp. TensorFlow writes autograph's generated sources to the temp directory and
    removes them at exit, which a process a test kills never reaches: they would pile up in /tmp."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if temp_dir is not None:
        path = pathlib.Path(temp_dir) / "tmp"
        path.mkdir(exist_ok=True)
        env["TMPDIR"] = str(path)
    return env


def start_learner(logdir, config: str, bindings: Sequence[str] = (), address="127.0.0.1:0",
                  flags: Sequence[str] = ()) -> subprocess.Popen:
    (pathlib.Path(logdir) / "learner_address").unlink(missing_ok=True)  # an earlier run's address
    args = [sys.executable, "-m", "learner", "--logdir", str(logdir), "--address", address,
            "--gin_config", config, *flags]
    for binding in bindings:
        args += ["--gin_bindings", binding]
    return subprocess.Popen(args, stdout=open(os.path.join(logdir, "learner.stdout"), "ab"),
                            stderr=subprocess.STDOUT, env=child_env(logdir), cwd=REPO_ROOT)


def wait_for_address(logdir, learner: subprocess.Popen, timeout_s: float = 120.0) -> str:
    """The learner writes LOGDIR/learner_address once it listens."""
    path = pathlib.Path(logdir) / "learner_address"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text().strip()
        if learner.poll() is not None:
            raise AssertionError(f"learner exited with {learner.returncode}:\n{learner_output(logdir)}")
        time.sleep(0.2)
    raise AssertionError(f"learner did not listen within {timeout_s} s:\n{learner_output(logdir)}")


def start_actors(logdir, config: str, address: str, num_actors: int,
                 bindings: Sequence[str] = (), first_index: int = 0) -> list[subprocess.Popen]:
    actors = []
    for i in range(first_index, first_index + num_actors):
        args = [sys.executable, "-m", "actors", "--logdir", str(logdir), "--learner_address", address,
                "--actor_index", str(i), "--gin_config", config]
        for binding in bindings:
            args += ["--gin_bindings", binding]
        actors.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       env=child_env(), cwd=REPO_ROOT))
    return actors


def wait_until(condition, timeout_s: float = 120.0, what: str = "", poll_s: float = 0.2) -> None:
    """Polls `condition` until it holds; fails the test after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def last_progress(logdir) -> dict:
    """The newest record of LOGDIR/progress.jsonl, {} before the first."""
    path = pathlib.Path(logdir) / "progress.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return json.loads(lines[-1]) if lines else {}


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def learner_output(logdir) -> str:
    path = pathlib.Path(logdir) / "learner.stdout"
    return path.read_text()[-5000:] if path.exists() else ""


def stop(processes, timeout_s: float = 30.0) -> list[int]:
    """SIGTERM, wait, then SIGKILL what is left; returns the exit codes."""
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    codes = []
    for p in processes:
        try:
            codes.append(p.wait(timeout_s))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    return codes


def read_episodes(logdir, evaluation=False):
    """(env_frames, raw_return) rows of LOGDIR/episodes.csv, of training or of evaluation envs;
    [] before the learner wrote it. A row the learner is still writing (no newline yet) is left out."""
    path = pathlib.Path(logdir) / "episodes.csv"
    lines = path.read_text().split("\n")[1:-1] if path.exists() else []
    rows = [line.split(",") for line in lines]
    return [(int(r[0]), float(r[1])) for r in rows if bool(int(r[4])) == evaluation]
