"""The one rule every launcher (run_local.sh's local launcher, seed-launch, seed-ray) applies to a role's
process that exited, so that a run behaves the same on a laptop, in a cluster job and on Ray.

Exit codes say why a role stopped: 0, it finished its budget or was stopped (Ctrl-C, SIGTERM); 2, its
configuration is wrong, which no restart fixes; 1, an actor found no learner for its reconnect timeout,
or a learner crashed; a negative code (Popen's), a signal killed it (the out-of-memory killer's SIGKILL).

- An **actor** is started again only when a signal killed it: an actor that exits by itself has a reason
  (no learner, refused) that a new one would meet too. SIGINT and SIGTERM are requests to stop (a Ctrl-C
  that reached it before its handler was installed), not failures.
- A **learner** is started again from its latest checkpoint when a signal killed it or it crashed (any
  code but 0 and 2), at most `max_learner_restarts` times over the run; its actors reconnect by themselves.
- Each process waits before its restart, 1 s at first and twice as long each time, up to 30 s, so a
  process that dies at once does not spin.
"""
import signal

FINAL_EXIT_CODES = (0, 2)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def describe_exit(code: int) -> str:
    """'signal KILL' for a process a signal ended (Popen's negative code), else 'exit code N'."""
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name.removeprefix('SIG')}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


class RestartPolicy:
    def __init__(self, max_learner_restarts: int = 3, first_backoff_s: float = 1.0, max_backoff_s: float = 30.0):
        if max_learner_restarts < 0:
            raise ValueError(f"max_learner_restarts must be 0 or more, got {max_learner_restarts}")
        self.max_learner_restarts = max_learner_restarts
        self.learner_restarts = 0
        self.first_backoff_s, self.max_backoff_s = first_backoff_s, max_backoff_s
        self._backoff: dict[object, float] = {}

    def restart(self, role: str, code: int) -> bool:
        """Whether the `role` ('learner' or 'actor') process that exited with `code` is started again;
        a learner's restart is counted against `max_learner_restarts`."""
        if role == "actor":
            return code < 0 and -code not in STOP_SIGNALS
        if code in FINAL_EXIT_CODES or self.learner_restarts >= self.max_learner_restarts:
            return False
        self.learner_restarts += 1
        return True

    def backoff_s(self, process: object) -> float:
        """Seconds to wait before starting `process` (any key naming it) again; doubles each call."""
        wait = self._backoff.get(process, self.first_backoff_s)
        self._backoff[process] = min(2 * wait, self.max_backoff_s)
        return wait
