"""The one restart rule of every launcher (seed/launchers/restarts.py)."""
import signal

import pytest

from seed.launchers.restarts import RestartPolicy, describe_exit


def test_an_actor_is_restarted_only_when_a_signal_killed_it():
    policy = RestartPolicy()
    assert policy.restart("actor", -signal.SIGKILL) and policy.restart("actor", -signal.SIGSEGV)
    assert not any(policy.restart("actor", code) for code in (0, 1, 2))  # stopped, no learner, refused
    # Ctrl-C or SIGTERM before the actor's own handler was installed: a stop, not a failure.
    assert not policy.restart("actor", -signal.SIGINT) and not policy.restart("actor", -signal.SIGTERM)


def test_a_learner_is_restarted_when_killed_or_crashed_a_bounded_number_of_times_and_never_after_0_or_2():
    policy = RestartPolicy(max_learner_restarts=2)
    assert not policy.restart("learner", 0) and not policy.restart("learner", 2)
    assert policy.restart("learner", -signal.SIGKILL) and policy.restart("learner", 1)
    assert not policy.restart("learner", -signal.SIGKILL) and policy.learner_restarts == 2
    with pytest.raises(ValueError, match="max_learner_restarts must be 0 or more, got -1"):
        RestartPolicy(max_learner_restarts=-1)


def test_each_process_waits_twice_as_long_before_every_restart_up_to_the_cap():
    policy = RestartPolicy(first_backoff_s=1.0, max_backoff_s=5.0)
    assert [policy.backoff_s("actor_0") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.backoff_s("actor_1") == 1.0


def test_exits_are_described_as_the_shell_names_them():
    assert describe_exit(-signal.SIGKILL) == "signal KILL" and describe_exit(1) == "exit code 1"
