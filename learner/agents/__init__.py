"""Every agent the learner can train, one folder each; importing this package registers them
(in `base.AGENTS` and with gin). The contract they satisfy is `base.Agent`.

Each subfolder's `agent.py` is imported here, so a new agent is one folder (and a gin file):
nothing outside it names it."""
import importlib
import pkgutil

from learner.agents.base import AGENTS, Agent, AgentContext, EvaluationPolicy, register  # noqa: F401

for _folder in pkgutil.iter_modules(__path__):
    if _folder.ispkg:
        importlib.import_module(f"{__name__}.{_folder.name}.agent")

# The bundled agents by name, for `from learner.agents import VTraceAgent`.
FixedActionAgent = AGENTS["FixedActionAgent"]
PPOAgent = AGENTS["PPOAgent"]
R2D2Agent = AGENTS["R2D2Agent"]
SACAgent = AGENTS["SACAgent"]
VTraceAgent = AGENTS["VTraceAgent"]
