"""Process plumbing both roles share: logging to the run directory and
turning SIGINT/SIGTERM into an orderly stop."""
import logging
import os
import signal
import sys
import threading


def setup_logging(logdir: str, process_name: str, level: int = logging.INFO) -> str:
    """Logs to LOGDIR/logs/<process_name>.log and to stderr."""
    log_dir = os.path.join(logdir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, f"{process_name}.log")
    formatter = logging.Formatter(f"%(asctime)s {process_name} %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    root.setLevel(level)
    for handler in (logging.FileHandler(path), logging.StreamHandler(sys.stderr)):
        handler.setFormatter(formatter)
        root.addHandler(handler)
    return path


def stop_on_signals() -> threading.Event:
    """An event set by the first SIGINT or SIGTERM; a second one exits at once.

    Installed explicitly because a shell starting us in the background leaves
    SIGINT ignored, and Python would inherit that.
    """
    stop = threading.Event()

    def handler(signum, frame):
        if stop.is_set():
            logging.getLogger(__name__).warning("second %s: exiting now", signal.Signals(signum).name)
            os._exit(130)
        logging.getLogger(__name__).info("%s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stop
