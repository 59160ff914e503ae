"""The training thread: batches from the agent's data source, updates, the frame budget and checkpoints."""
import logging
import threading
import time

from learner.checkpoints import Checkpointer
from learner.frame_counter import FrameCounter
from learner.optimizers import current_learning_rate

log = logging.getLogger(__name__)

class TrainingLoop:
    """The training thread: batches from the agent's data source, updates, frame budget, checkpoints."""

    def __init__(self, agent, checkpointer: Checkpointer, frames: FrameCounter, total_frames: int,
                 checkpoint_interval_s: float, stop: threading.Event, max_consecutive_skipped_updates: int = 100):
        self.agent, self.checkpointer, self.frames, self.total_frames = agent, checkpointer, frames, total_frames
        self.checkpoint_interval_s, self.stop = checkpoint_interval_s, stop
        self.max_consecutive_skipped_updates = max_consecutive_skipped_updates
        self.budget_reached = threading.Event()
        self.last_metrics: dict[str, float] = {}
        self.num_updates = 0
        self.num_skipped_updates = 0
        # Where the training thread's time goes (microseconds in all): waiting for a batch (the data
        # side is the bound) against updating (the learner is).
        self.batch_wait_us = 0
        self.update_us = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="training", daemon=True)

    def counters(self) -> dict[str, int]:
        """The frame budget's count, the updates applied and skipped, and where the thread's time went."""
        return {"frames": self.frames.trained_frames, "updates": self.num_updates,
                "skipped_updates": self.num_skipped_updates, "training/batch_wait_us": self.batch_wait_us,
                "training/update_us": self.update_us}

    def metrics(self) -> dict[str, float]:
        """The learning rate now and the last applied update's metrics."""
        rate = {"learning_rate": current_learning_rate(self.agent.optimizer)} if self.agent.optimizer else {}
        return {**rate, **{k: float(v) for k, v in self.last_metrics.items()}}

    def _run(self) -> None:
        last_save, skipped_in_a_row = time.monotonic(), 0
        try:
            while not self.stop.is_set() and self.frames.trained_frames < self.total_frames:
                started = time.perf_counter_ns()
                batch = self.agent.data.next_batch()  # None once the learner closed it
                batched = time.perf_counter_ns()
                self.batch_wait_us += (batched - started) // 1000
                if batch is None:
                    break
                metrics, new_frames = self.agent.update(batch)
                self.update_us += (time.perf_counter_ns() - batched) // 1000
                self.frames.add_trained(new_frames)
                if not metrics.pop("update_applied"):
                    self.num_skipped_updates += 1
                    skipped_in_a_row += 1
                    log.warning("skipped an update with a non-finite loss or gradient (%d so far)",
                                self.num_skipped_updates)
                    if skipped_in_a_row >= self.max_consecutive_skipped_updates:
                        raise FloatingPointError(
                            f"{skipped_in_a_row} updates in a row had a non-finite loss or gradient; stopping and "
                            "keeping the last checkpoint (lower the learning rate or check the rewards)")
                    continue
                skipped_in_a_row = 0
                self.num_updates += 1
                self.last_metrics = metrics
                if time.monotonic() - last_save >= self.checkpoint_interval_s:
                    self.checkpointer.save()
                    last_save = time.monotonic()
            if self.frames.trained_frames >= self.total_frames:
                self.budget_reached.set()
        except FloatingPointError as e:
            log.error("%s", e)
            self.error = e
        except Exception as e:  # The supervisor reports it and stops the learner.
            log.exception("training failed")
            self.error = e
