"""Weights & Biases, optional (.venv/bin/pip install -e '.[wandb]' in the checkout): the learner's progress records
as a W&B run, with the operative gin config as the run's config.

The W&B run id is kept in LOGDIR/wandb_run_id, so a resumed seed run continues the same W&B run.
Charts use `frames` (environment frames trained, the TensorBoard step) as their x axis. W&B's own
settings apply: WANDB_MODE=offline writes the run under LOGDIR/wandb for a later `wandb sync`;
WANDB_API_KEY or `wandb login` for online runs.
"""
import logging
import os
import secrets
from collections.abc import Sequence

from seed.gin_setup import gin_settings

log = logging.getLogger(__name__)

# Progress fields that are not scalars of the run, or are already its x axis.
_NOT_LOGGED = ("time",)


class WandbTracker:
    """One W&B run per seed run directory."""

    def __init__(self, logdir: str, project: str, entity: str | None, run_name: str | None,
                 tags: Sequence[str], operative_config: str):
        try:
            import wandb
        except ImportError:
            raise ValueError("reporting.wandb_project is set but wandb is not installed: "
                             ".venv/bin/pip install -e '.[wandb]' in the checkout (or unset wandb_project)") from None
        id_path = os.path.join(logdir, "wandb_run_id")
        if os.path.exists(id_path):
            with open(id_path) as f:
                run_id = f.read().strip()
        else:
            run_id = secrets.token_hex(6)  # W&B run ids: lower-case letters and digits
            with open(id_path, "w") as f:
                f.write(run_id + "\n")
        try:
            self.run = wandb.init(project=project, entity=entity,
                                  name=run_name or os.path.basename(os.path.normpath(logdir)), tags=list(tags),
                                  id=run_id, resume="allow", dir=logdir, config=gin_settings(operative_config))
        except Exception as e:  # not logged in, no network, a bad entity: W&B's own error types vary
            raise ValueError(f"W&B could not start run {run_id} in project {project!r}: "
                             f"{str(e).splitlines()[0] if str(e) else type(e).__name__}; log in (wandb login or "
                             "WANDB_API_KEY), or set WANDB_MODE=offline, or unset reporting.wandb_project") from e
        self.run.define_metric("*", step_metric="frames")
        log.info("W&B run %s (project %s, mode %s)", run_id, project, self.run.settings.mode)

    def log(self, record: dict[str, object]) -> None:
        self.run.log({k: v for k, v in record.items()
                      if k not in _NOT_LOGGED and isinstance(v, (int, float)) and not isinstance(v, bool)})

    def close(self) -> None:
        self.run.finish()
