"""Process plumbing both roles share: gRPC's polling mode, logging to the run
directory and turning SIGINT/SIGTERM into an orderly stop."""
import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator

# grpcio's EventEngine client and listener (its default I/O path) read and write
# sockets on a pool of their own threads, so every message also wakes one of
# those; without them the thread that polls does the I/O. Measured 2-6 % more
# env steps/s through the transport on 2 cores
# (benchmarks/experiments/2026-11-22-transport-sequential.md).
GRPC_EXPERIMENTS = "-event_engine_client,-event_engine_listener"


def use_polling_thread_io() -> bool:
    """Opts this process out of grpcio's EventEngine I/O threads (see GRPC_EXPERIMENTS).

    grpcio reads the setting once, when it is imported, so this must run first;
    a GRPC_EXPERIMENTS the user set wins. Returns whether the setting can apply.
    """
    if "grpc" in sys.modules:
        return False
    os.environ.setdefault("GRPC_EXPERIMENTS", GRPC_EXPERIMENTS)
    return True


#: `extra=CONSOLE` marks the few INFO records a user sees without --verbose (the device, a resume, the
#: address): the terminal shows those, warnings and errors; the log file gets everything.
CONSOLE = {"console": True}


class _Console(logging.Filter):
    def __init__(self, verbose: bool):
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        return self.verbose or record.levelno >= logging.WARNING or getattr(record, "console", False)


def setup_logging(logdir: str | None, process_name: str, verbose: bool = False) -> str | None:
    """Logs everything to LOGDIR/logs/<process_name>.log (when there is a LOGDIR) and to stderr what a
    user needs there: CONSOLE records, warnings and errors; every INFO record too when `verbose`."""
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    console = logging.StreamHandler(sys.stderr)
    console.addFilter(_Console(verbose))
    console.setFormatter(logging.Formatter(
        f"%(asctime)s {process_name} %(levelname)s %(name)s: %(message)s" if verbose
        else f"{process_name}: %(message)s"))
    root.addHandler(console)
    if logdir is None:
        return None
    log_dir = os.path.join(logdir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, f"{process_name}.log")
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(f"%(asctime)s {process_name} %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    return path


# TensorFlow's native start-up lines: printed while it loads and probes for CUDA, before its own log
# level applies, and no use to a user (CPU features, "no CUDA driver", a failed cuInit on a CPU host).
NATIVE_STARTUP_NOISE = re.compile(
    r"^WARNING: All log messages before absl::InitializeLog|^[IW]\d{4} [\d:.]+ +\d+ \w+\.cc:\d+\]"
    r"|^To enable the following instructions:|cuda_platform\.cc:\d+\] failed call to cuInit")


@contextlib.contextmanager
def native_startup_filtered(verbose: bool) -> Iterator[None]:
    """Holds back what C++ and Python write to stderr (fd 2) inside the block and passes it on at its
    end without NATIVE_STARTUP_NOISE; passes everything at once when `verbose`. For TensorFlow's
    import and device probing only: a crash inside the block would lose what it held back."""
    if verbose:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            for line in held.read().decode(errors="replace").splitlines(keepends=True):
                if not NATIVE_STARTUP_NOISE.search(line):
                    sys.stderr.write(line)
            sys.stderr.flush()


def stop_on_signals(impatient_after_s: float = 3.0) -> threading.Event:
    """An event set by the first SIGINT or SIGTERM; another one more than
    `impatient_after_s` later exits at once, without the orderly stop.

    Signals in quick succession count as one: Ctrl-C in a terminal reaches a
    process directly and again through run_local.sh's forwarding. Installed
    explicitly because a shell starting us in the background leaves SIGINT
    ignored, and Python would inherit that.
    """
    stop = threading.Event()
    first_signal_at = []

    def handler(signum, frame):
        name = signal.Signals(signum).name
        if first_signal_at:
            if time.monotonic() - first_signal_at[0] > impatient_after_s:
                logging.getLogger(__name__).warning("%s again: exiting now, without a checkpoint", name)
                os._exit(130)
            return
        first_signal_at.append(time.monotonic())
        logging.getLogger(__name__).info("%s: stopping (again after %.0f s to exit at once)", name,
                                         impatient_after_s)
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stop


def stop_processes(processes, timeout_s: float) -> None:
    """SIGTERM to every process still running (each role stops in order, the learner with a checkpoint),
    then SIGKILL to any still running `timeout_s` later; returns once all have exited."""
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for p in processes:
        try:
            p.wait(max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
