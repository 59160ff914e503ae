"""Every gin configurable documents each setting a binding may give it: a docstring line
"`NAME`: what it does, unit (default)", as the configurables' "Settings:" sections do."""
import inspect
import re

import gin
import pytest

import actors.actor  # noqa: F401  the imports register every configurable of the project
import learner.agents  # noqa: F401
import learner.learner  # noqa: F401
import learner.networks  # noqa: F401
import learner.optimizers  # noqa: F401
import learner.settings  # noqa: F401
import learner.strategy  # noqa: F401
import seed.envs  # noqa: F401

CONFIGURABLES = ("create_envs", "create_atari_envs", "create_gym_envs", "run_actor", "training", "inference",
                 "service", "reporting", "create_strategy", "create_optimizer", "ActorCriticNetwork",
                 "DuelingQNetwork", "VTraceAgent", "VTraceLoss",
                 "VTraceTrainer", "R2D2Agent", "R2D2Trainer", "FixedActionAgent", "PPOAgent", "PPOLoss", "PPOTrainer",
                 "ContinuousActorCriticNetwork", "SACAgent", "SACTrainer", "create_mujoco_envs", "create_dmc_envs",
                 "create_dmlab_envs", "create_football_envs",
                 "create_procgen_envs",
                 "PrioritisedSampler", "EliteSampler", "AttentiveSampler")
PACKAGES = ("seed", "actors", "learner")


def settable_parameters(name):
    """The parameters a binding may set: those with defaults, minus the configurable's denylist."""
    configurable = gin.get_configurable(name)
    function = configurable.__init__ if inspect.isclass(configurable) else configurable
    denylist = set(gin.config._REGISTRY.get_match(name).denylist or ())
    return [p.name for p in inspect.signature(function).parameters.values()
            if p.default is not inspect.Parameter.empty and p.kind is not inspect.Parameter.VAR_KEYWORD
            and p.name not in denylist]


def docstring(name):
    configurable = gin.get_configurable(name)
    if inspect.isclass(configurable):
        return "\n".join(filter(None, (inspect.getdoc(configurable), inspect.getdoc(configurable.__init__))))
    return inspect.getdoc(configurable) or ""


@pytest.mark.parametrize("name", CONFIGURABLES)
def test_every_setting_of_a_configurable_has_a_line_in_its_docstring(name):
    doc = docstring(name)
    undocumented = [p for p in settable_parameters(name)
                    if not re.search(rf"^\s*`{re.escape(p)}`:", doc, re.MULTILINE)]
    assert not undocumented, f"{name}'s docstring has no line \"`NAME`: ...\" for {', '.join(undocumented)}"


def test_the_list_checked_holds_every_configurable_of_the_project():
    registered = {configurable.name for _, configurable in gin.config._REGISTRY.items()
                  if configurable.module.split(".")[0] in PACKAGES}
    assert sorted(CONFIGURABLES) == sorted(registered), (
        f"configurables not checked: {sorted(registered - set(CONFIGURABLES))}; "
        f"checked but not registered: {sorted(set(CONFIGURABLES) - registered)}")
