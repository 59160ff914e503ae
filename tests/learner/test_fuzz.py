"""Random and mutated messages against a running learner service; a
well-behaved actor must still be served afterwards."""
import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seed import handshake
from tests.learner.test_service import SPEC, RawClient, assert_serves_a_new_actor, good_steps, serving

VALID = [handshake.make_hello("fuzz", 2, SPEC).SerializeToString(), good_steps(2).SerializeToString(),
         handshake.make_hello("fuzz", 2, SPEC, auth_token="x").SerializeToString()]


@st.composite
def mutated(draw):
    message = bytearray(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 6))):
        action = draw(st.sampled_from(["flip", "cut", "insert"]))
        position = draw(st.integers(0, max(0, len(message) - 1)))
        if action == "flip" and message:
            message[position] ^= draw(st.integers(1, 255))
        elif action == "cut":
            del message[position:]
        else:
            message[position:position] = draw(st.binary(min_size=1, max_size=8))
    return bytes(message)


messages = st.lists(st.one_of(st.binary(max_size=64), mutated(), st.sampled_from(VALID)), min_size=1, max_size=4)


@pytest.fixture(scope="module")
def roomy_learner():
    # Room for the streams of examples whose slots are still being freed when the next one starts.
    with serving(max_slots=256, max_actors=64) as running:
        yield running


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=messages)
def test_random_and_mutated_messages_never_take_the_learner_down(roomy_learner, sequence):
    address = roomy_learner[0]
    client = RawClient(address)
    for raw in sequence:
        try:
            client.send(raw)
        except grpc.RpcError as e:
            assert e.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
                                grpc.StatusCode.UNAUTHENTICATED), (e.code(), e.details())
            break
        except StopIteration:
            break
    client.close()
    assert_serves_a_new_actor(address)
