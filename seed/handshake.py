"""The stream's opening and closing: the actor's Hello (its envs, their spec and its token), the
learner's check that both sides run the same env, how an actor's envs split into groups, and the
Goodbye that says a stream ended on purpose."""
import numpy as np

from seed import seed_pb2
from seed.specs import ActionSpec, EnvSpec


def make_hello(actor_name: str, num_envs: int, spec: EnvSpec, auth_token: str = "",
               num_env_groups: int = 1) -> seed_pb2.ActorMessage:
    return seed_pb2.ActorMessage(hello=seed_pb2.Hello(
        actor_name=actor_name, num_envs=num_envs,
        observation_shape=list(spec.observation_shape),
        observation_dtype=spec.observation_dtype,
        num_actions=spec.num_actions, auth_token=auth_token, num_env_groups=num_env_groups,
        action_spec=seed_pb2.ActionSpec(num_actions=spec.action.num_actions, shape=list(spec.action.shape),
                                        low=list(spec.action.low), high=list(spec.action.high))))


def hello_action_spec(hello: seed_pb2.Hello) -> ActionSpec:
    """The actor's action spec; an actor from before action specs sends only num_actions."""
    if not hello.HasField("action_spec"):
        return ActionSpec.discrete(hello.num_actions)
    wire = hello.action_spec
    return ActionSpec(wire.num_actions, tuple(wire.shape), tuple(wire.low), tuple(wire.high))


GOODBYE = seed_pb2.ActorMessage(goodbye=seed_pb2.Goodbye())


def env_group_bounds(num_envs: int, num_groups: int) -> np.ndarray:
    """[num_groups + 1] offsets: group g is envs bounds[g]:bounds[g + 1] (numpy's array_split sizes)."""
    sizes = np.full(num_groups, num_envs // num_groups)
    sizes[:num_envs % num_groups] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


def spec_mismatch(hello: seed_pb2.Hello, spec: EnvSpec) -> str:
    """Returns '' when the actor's env matches the learner's, else what differs."""
    problems = []
    if tuple(hello.observation_shape) != tuple(spec.observation_shape):
        problems.append(f"observation shape {tuple(hello.observation_shape)} != learner's "
                        f"{tuple(spec.observation_shape)}")
    if hello.observation_dtype != spec.observation_dtype:
        problems.append(f"observation dtype {hello.observation_dtype!r} != learner's "
                        f"{spec.observation_dtype!r}")
    actions = hello_action_spec(hello)
    if not _same_actions(actions, spec.action):
        problems.append(f"{actions.describe()} != learner's {spec.action.describe()}")
    if hello.HasField("action_spec") and hello.num_actions != actions.num_actions:
        problems.append(f"num_actions {hello.num_actions} disagrees with the Hello's own action spec "
                        f"({actions.describe()})")
    if hello.num_envs <= 0:
        problems.append(f"num_envs must be positive, got {hello.num_envs}")
    if not 0 <= hello.num_env_groups <= max(hello.num_envs, 1):
        problems.append(f"num_env_groups must be between 1 and num_envs ({hello.num_envs}), "
                        f"got {hello.num_env_groups}")
    if not problems:
        return ""
    return ("actor env does not match the learner's: " + "; ".join(problems) +
            ". Start actor and learner with the same --gin_config and env bindings.")


def _same_actions(a: ActionSpec, b: ActionSpec) -> bool:
    """Equal kinds, shapes and (float32-rounded) bounds; bounds of other lengths never raise."""
    return (a.num_actions == b.num_actions and a.shape == b.shape and len(a.low) == len(b.low)
            and len(a.high) == len(b.high) and np.allclose(a.low, b.low) and np.allclose(a.high, b.high))
