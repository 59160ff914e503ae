"""TLS and the shared token between real learner and actor processes."""
import subprocess
import sys

from tests import processes
from tests.learner.test_tls import make_certificate
from tests.test_faults import latest_frames, wait_until


def test_actor_trains_over_tls_with_a_token_and_one_with_the_wrong_ca_gives_up_with_a_hint(tmp_path):
    cert, key = make_certificate(tmp_path, "learner")
    other_ca, _ = make_certificate(tmp_path, "other")
    token = tmp_path / "token"
    token.write_text("correct horse battery staple\n")
    security = [f"service.tls_cert_file='{cert}'", f"service.tls_key_file='{key}'",
                f"service.auth_token_file='{token}'", f"run_actor.auth_token_file='{token}'"]
    learner = processes.start_learner(tmp_path, "classic_vtrace.gin",
                                      security + ["training.checkpoint_interval_s=1"])
    address = processes.wait_for_address(tmp_path, learner)
    host_address = address.replace("127.0.0.1", "localhost")
    actors = processes.start_actors(tmp_path, "classic_vtrace.gin", host_address, 1,
                                    security + [f"run_actor.tls_ca_file='{cert}'", "run_actor.num_envs=2"])
    try:
        wait_until(lambda: latest_frames(tmp_path) > 0, what="training over TLS")
        wrong = subprocess.run(
            [sys.executable, "-m", "actors", "--learner_address", host_address, "--actor_index", "5",
             "--gin_config", "classic_vtrace.gin", "--gin_bindings", f"run_actor.tls_ca_file='{other_ca}'",
             "--gin_bindings", "run_actor.reconnect_timeout_s=3"],
            capture_output=True, text=True, timeout=120, cwd=processes.REPO_ROOT)
        assert wrong.returncode == 1
        assert "does run_actor.tls_ca_file hold the CA that signed the learner's certificate" in wrong.stderr
    finally:
        processes.stop([learner] + actors)


def test_run_files_follow_the_umask_and_stay_inside_the_run_directory(tmp_path):
    import os
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    logdir = tmp_path / "run"
    logdir.mkdir()
    env = dict(os.environ, PYTHONPATH=str(processes.REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    common = ["--gin_config", "classic_vtrace.gin", "--gin_bindings", "training.total_environment_frames=3200"]
    learner = subprocess.Popen([sys.executable, "-m", "learner", "--logdir", str(logdir), "--address", "127.0.0.1:0",
                                *common], cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               preexec_fn=lambda: os.umask(0o077))
    address = processes.wait_for_address(logdir, learner)
    actor = subprocess.Popen([sys.executable, "-m", "actors", "--logdir", str(logdir), "--learner_address", address,
                              *common], cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=lambda: os.umask(0o077))
    try:
        assert learner.wait(300) == 0
    finally:
        processes.stop([learner, actor])
    assert list(workdir.iterdir()) == []  # nothing written beside the run directory
    written = [p for p in logdir.rglob("*") if p.is_file()]
    assert any(p.parent.name == "checkpoints" for p in written)
    loose = [str(p) for p in written if p.stat().st_mode & 0o077]
    assert loose == [], f"files readable by others despite umask 077: {loose}"
