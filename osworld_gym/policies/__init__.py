"""Policies that ship with the env library: what turns an observation into the next action.

- ``uitars``: the UI-TARS-1.5 agent (ARPO's prompt, image history, screenshot encoding), a
  stateless pool policy over any rollout engine.
- ``engine``: the interface a rollout engine implements (``RolloutEngine``, ``SamplingParams``,
  ``Generation``); ``conversation``: the engine-neutral chat an agent builds;
  ``openai_http``: an engine that calls an OpenAI-compatible server (vLLM, SGLang, an API).
- ``oracles``: scripted solutions of the bundled suites, and the ``oracle`` agent that replays
  them.

Nothing here imports torch or a model library: the engines that run a model in-process live
with the trainer (``osworld_agents.engines``). The trainer adapters (``osworld_gym.integrations``)
and the ``osworld-gym run --agent`` choices use these.
"""
