"""The Hello and the learner's check of it: what differs is named, action specs survive the wire."""
import dataclasses

import numpy as np
import pytest

from seed import handshake, seed_pb2
from seed.specs import ActionSpec, EnvSpec

ATARI = EnvSpec((84, 84), "uint8", 6, 4)


def test_spec_mismatch_says_what_differs():
    hello = handshake.make_hello("a", 4, EnvSpec((4,), "float32", 2)).hello
    problem = handshake.spec_mismatch(hello, ATARI)
    assert "observation shape (4,) != learner's (84, 84)" in problem
    assert "2 actions != learner's 6" in problem
    assert handshake.spec_mismatch(handshake.make_hello("a", 4, ATARI).hello, ATARI) == ""


PENDULUM = EnvSpec((3,), "float32", 0, action=ActionSpec.continuous([-2.0], [2.0]))
ARM = EnvSpec((11,), "float64", 0, action=ActionSpec.continuous(-np.ones((2, 3)), np.ones((2, 3))))


def hello_over_the_wire(spec, **kwargs):
    return seed_pb2.ActorMessage.FromString(handshake.make_hello("a", 2, spec, **kwargs).SerializeToString()).hello


@pytest.mark.parametrize("spec", [ATARI, PENDULUM, ARM])
def test_the_hello_carries_the_action_spec_and_matches_only_the_same_one(spec):
    hello = hello_over_the_wire(spec)
    assert handshake.hello_action_spec(hello) == spec.action and handshake.spec_mismatch(hello, spec) == ""
    other = {ATARI: PENDULUM, PENDULUM: ARM, ARM: ATARI}[spec]
    assert "!= learner's" in handshake.spec_mismatch(hello, dataclasses.replace(
        spec, num_actions=other.num_actions, action=other.action))


def test_other_action_bounds_are_a_mismatch_and_malformed_ones_do_not_raise():
    wider = EnvSpec((3,), "float32", 0, action=ActionSpec.continuous([-3.0], [3.0]))
    assert "continuous 1 actions in [-2, 2] != learner's continuous 1 actions in [-3, 3]" in \
        handshake.spec_mismatch(hello_over_the_wire(PENDULUM), wider)
    hello = hello_over_the_wire(PENDULUM)
    del hello.action_spec.low[:]  # bounds of the wrong length: a bad actor, not a crash
    assert "!= learner's" in handshake.spec_mismatch(hello, PENDULUM)


def test_a_hello_without_an_action_spec_is_read_as_discrete_num_actions():
    hello = hello_over_the_wire(ATARI)
    hello.ClearField("action_spec")
    assert handshake.hello_action_spec(hello) == ActionSpec.discrete(6)
    assert handshake.spec_mismatch(hello, ATARI) == ""


def test_a_hello_whose_num_actions_disagrees_with_its_own_action_spec_is_a_mismatch():
    hello = hello_over_the_wire(ATARI)
    hello.num_actions = 4
    problem = handshake.spec_mismatch(hello, ATARI)
    assert "num_actions 4 disagrees with the Hello's own action spec (6 actions)" in problem
    hello = hello_over_the_wire(ATARI)
    hello.action_spec.shape.append(2)  # discrete with a shape: described, not equal
    assert "6 actions with shape (2,)" in handshake.spec_mismatch(hello, ATARI)
