import gin
import pytest

from learner.settings import InferenceSettings, ReportingSettings, ServiceSettings, TrainingSettings


@pytest.mark.parametrize("make, message", [
    (lambda: TrainingSettings(num_stacked_frames=0), "training.num_stacked_frames must be positive, got 0"),
    (lambda: TrainingSettings(total_environment_frames=-1), "training.total_environment_frames must be 0 or more"),
    (lambda: TrainingSettings(schedule_frames=0), "training.schedule_frames must be positive"),
    (lambda: TrainingSettings(reward_clipping="tanh"), "reward_clipping"),
    (lambda: InferenceSettings(batch_size=0), "inference.batch_size must be positive"),
    (lambda: InferenceSettings(batch_timeout_ms=-1.0), "inference.batch_timeout_ms must be 0 or more"),
    (lambda: ServiceSettings(max_actors=0), "service.max_actors must be positive"),
    (lambda: ReportingSettings(progress_interval_s=0), "reporting.progress_interval_s must be positive"),
])
def test_a_bad_setting_is_refused_in_one_line_that_names_it(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_groups_read_their_values_from_gin_bindings():
    with gin.unlock_config():
        gin.parse_config(["training.total_environment_frames = 1_000", "training.schedule_frames = None",
                          "inference.batch_size = 8", "service.max_actors = 2", "reporting.progress_interval_s = 1"])
    try:
        training = TrainingSettings()
        assert training.total_environment_frames == 1_000 and training.horizon_frames == 1_000
        assert InferenceSettings().batch_size == 8 and ServiceSettings().max_actors == 2
        assert ReportingSettings().progress_interval_s == 1
    finally:
        gin.clear_config()
    assert TrainingSettings(schedule_frames=5_000).horizon_frames == 5_000
