"""Dynamic batching of actor steps for one batched policy call.

gRPC handler threads `submit` one actor's N env steps and wait for the
actions. One inference thread takes requests until a full batch is waiting or
a wait has passed since the first one arrived: `batch_timeout_ms`, or less
once policy calls are known to be quicker (the wait is capped at their moving
average duration, and under a millisecond it is skipped), so a run with fewer
envs than the batch size is never stuck waiting and cheap calls are not held
back for stragglers. A full batch is `max_batch_envs`, or fewer when fewer envs
can be waiting at once (the service tells `expected_envs` as actors come and
go): the batch then grows with the number of envs instead of waiting for envs
that do not exist. An actor's envs are never split across batches.
"""
import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from learner.data import LearnerStopped
from seed.codec import EnvStepBatch

log = logging.getLogger(__name__)


class StepRequest(NamedTuple):
    slot_ids: np.ndarray
    steps: EnvStepBatch
    answer: concurrent.futures.Future


class ReleaseRequest(NamedTuple):
    slot_ids: np.ndarray


_MIN_WAIT_S = 0.001  # shorter straggler waits are skipped (see _max_wait_s)

# (slot_ids [B], steps for B envs) -> actions [B]
InferenceFn = Callable[[np.ndarray, EnvStepBatch], np.ndarray]


class InferenceBatcher:
    def __init__(self, infer: InferenceFn, release: Callable[[np.ndarray], None],
                 max_batch_envs: int, batch_timeout_ms: float):
        self._infer = infer
        self._release = release
        self.max_batch_envs = max_batch_envs
        self.batch_timeout_s = batch_timeout_ms / 1000.0
        self._requests = queue.Queue()
        self._carry = None  # a request that would have overfilled the last batch
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="inference", daemon=True)
        self.error = None
        self._expected_envs = 0  # 0: unknown, wait for max_batch_envs
        self._expected_lock = threading.Lock()
        self.num_batches = 0
        self.num_batched_envs = 0
        self.call_s = 0.0  # moving average of one policy call's duration

    def start(self) -> None:
        self._thread.start()

    def counters(self) -> dict[str, int]:
        """Policy calls made and the envs they served (their ratio is the mean inference batch)."""
        return {"inference/batches": self.num_batches, "inference/batched_envs": self.num_batched_envs}

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is None:  # never started: nobody else answers what was submitted
            self._fail_pending()
        else:
            self._thread.join()

    def expect_envs(self, change: int) -> None:
        """Adds (or with a negative change removes) envs that can be waiting at the same time."""
        with self._expected_lock:
            self._expected_envs += change

    def submit(self, slot_ids: np.ndarray, steps: EnvStepBatch) -> concurrent.futures.Future:
        answer = concurrent.futures.Future()
        if self._stop.is_set():
            answer.set_exception(LearnerStopped())
        else:
            self._requests.put(StepRequest(slot_ids, steps, answer))
        return answer

    def release(self, slot_ids: np.ndarray) -> None:
        """Frees slots after every step already submitted for them was answered (FIFO)."""
        self._requests.put(ReleaseRequest(slot_ids))

    def _next(self, timeout: float):
        """The carried-over request, else a queued one; with no timeout left, only one already queued."""
        if self._carry is not None:
            request, self._carry = self._carry, None
            return request
        return self._requests.get(timeout=timeout) if timeout > 0 else self._requests.get_nowait()

    def _full_batch(self) -> int:
        expected = self._expected_envs  # read on every request: actors come and go
        return min(self.max_batch_envs, expected) if expected > 0 else self.max_batch_envs

    def _max_wait_s(self) -> float:
        # A request that misses this batch waits about one call for the next one; waiting
        # longer than a call for stragglers only idles everyone else (and the cores).
        wait = min(self.batch_timeout_s, self.call_s) if self.num_batches else self.batch_timeout_s
        # A sleep shorter than that costs a thread wake-up, about what it could save:
        # take only what is already queued (measured: +5 % transport on 2 shared cores).
        return wait if wait >= _MIN_WAIT_S else 0.0

    def _collect(self):
        """Blocks for the first request, then gathers more until the size or time limit."""
        batch: list[StepRequest] = []
        releases: list[ReleaseRequest] = []
        num_envs = 0
        deadline = None
        while num_envs < self._full_batch() and not self._stop.is_set():
            # Past the deadline, still take what is already queued: it costs no waiting.
            timeout = 0.1 if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                request = self._next(timeout)
            except queue.Empty:
                if deadline is None:
                    continue
                break
            if isinstance(request, ReleaseRequest):
                releases.append(request)
                if not batch:
                    break  # nothing waits on it; free the slots now
                continue
            n = len(request.slot_ids)
            if batch and num_envs + n > self.max_batch_envs:
                self._carry = request
                break
            batch.append(request)
            num_envs += n
            if deadline is None:
                deadline = time.monotonic() + self._max_wait_s()
        return batch, releases

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                batch, releases = self._collect()
                if batch:
                    self._run(batch)
                for release in releases:
                    self._release(release.slot_ids)
        except Exception as e:  # The learner's supervisor sees `error` and stops.
            self.error = e
            self._stop.set()
        finally:
            self._fail_pending()

    def _run(self, batch: list[StepRequest]) -> None:
        if len(batch) == 1:
            slot_ids, steps = batch[0].slot_ids, batch[0].steps
        else:
            slot_ids = np.concatenate([r.slot_ids for r in batch])
            steps = EnvStepBatch(*(np.concatenate(parts) for parts in zip(*(r.steps for r in batch))))
        started = time.monotonic()
        try:
            actions = self._infer(slot_ids, steps)
        except LearnerStopped as e:
            for request in batch:
                request.answer.set_exception(e)
            return
        except Exception as e:  # Answer every waiting actor, then surface the bug.
            log.exception("inference failed")
            for request in batch:
                request.answer.set_exception(e)
            raise
        self.call_s += (time.monotonic() - started - self.call_s) * (0.1 if self.num_batches else 1.0)
        self.num_batches += 1
        self.num_batched_envs += len(slot_ids)
        start = 0
        for request in batch:
            end = start + len(request.slot_ids)
            request.answer.set_result(actions[start:end])
            start = end

    def _fail_pending(self) -> None:
        pending = [self._carry] if self._carry is not None else []
        while True:
            try:
                pending.append(self._requests.get_nowait())
            except queue.Empty:
                break
        for request in pending:
            if isinstance(request, StepRequest):
                request.answer.set_exception(LearnerStopped())
