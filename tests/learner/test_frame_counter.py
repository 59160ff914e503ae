from learner.checkpoints import Checkpointer
from learner.frame_counter import FrameCounter


def test_both_counts_come_back_from_the_checkpoint(tmp_path):
    counter = FrameCounter(frames_per_step=4)
    saver = Checkpointer(str(tmp_path), before_save=counter.before_save, **counter.trackables())
    counter.trained.assign_add(2_000)
    counter.env_steps += 700
    saver.save()
    counter.env_steps += 50  # stepped after the checkpoint: lost with a crash

    resumed = FrameCounter(frames_per_step=4)
    assert Checkpointer(str(tmp_path), **resumed.trackables()).restore_latest()
    resumed.resume(logged_stepped_frames=0)
    assert (resumed.trained_frames, resumed.stepped_frames) == (2_000, 2_800)


def test_frames_stepped_go_on_past_the_episode_log_so_a_resumed_curve_never_steps_back(tmp_path):
    counter = FrameCounter(frames_per_step=4)
    Checkpointer(str(tmp_path), before_save=counter.before_save, **counter.trackables()).save()
    counter.resume(logged_stepped_frames=3_000)  # episodes logged after the checkpoint, before a crash
    assert counter.stepped_frames == 3_000
