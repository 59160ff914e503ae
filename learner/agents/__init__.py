"""Every agent the learner can train, one folder each; importing this package registers them
(in `base.AGENTS` and with gin). The contract they satisfy is `base.Agent`."""
from learner.agents.base import AGENTS, Agent, AgentContext, EvaluationPolicy, register  # noqa: F401
from learner.agents.fixed_action.agent import FixedActionAgent  # noqa: F401
from learner.agents.r2d2.agent import R2D2Agent  # noqa: F401
from learner.agents.vtrace.agent import VTraceAgent  # noqa: F401
