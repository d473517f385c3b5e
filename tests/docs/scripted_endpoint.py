"""An OpenAI-compatible chat endpoint on loopback that answers as UI-TARS solving ``ui-basics``.

It stands in for the model server of ``examples/openai_endpoint/run_episodes.py``: it finds the
task by its instruction in the conversation and answers the ``ui-basics`` oracle's response
for the turn (the number of assistant messages so far). Tasks that share an instruction
(``ui-basics`` asks for each colour in several layouts) all get the first one's answers.
"""

from __future__ import annotations

import collections.abc
import contextlib
import json
from typing import Any

from chat_endpoint import assistant_turn, chat_endpoint

from osworld_gym import load_tasks
from osworld_gym.policies.oracles.ui_basics import SUITE, oracle_responses


@contextlib.contextmanager
def scripted_endpoint() -> collections.abc.Iterator[str]:
    """Serve the endpoint on a free loopback port; yield its base URL (``.../v1``)."""
    # The instruction as it appears inside the JSON text of the messages.
    instructions = {task.id: json.dumps(task.instruction)[1:-1] for task in load_tasks(SUITE)}

    def reply(body: dict[str, Any]) -> str:
        conversation = json.dumps(body["messages"])
        for task_id, instruction in instructions.items():
            if instruction in conversation:
                responses = oracle_responses(task_id)
                return responses[min(assistant_turn(body), len(responses) - 1)]
        raise LookupError("no ui-basics instruction in the conversation")

    with chat_endpoint(reply) as endpoint:
        yield endpoint.url
