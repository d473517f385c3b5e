"""An OpenAI-compatible chat endpoint on loopback that answers as UI-TARS solving ``ui-basics``.

It stands in for the model server of ``examples/openai_endpoint/run_episodes.py``: it finds the
task by its instruction in the conversation and answers the ``ui-basics`` oracle's response
for the turn (the number of assistant messages so far). Tasks that share an instruction
(``ui-basics`` asks for each colour in several layouts) all get the first one's answers.
"""

from __future__ import annotations

import collections.abc
import contextlib
import http.server
import json
from typing import Any

from http_helpers import loopback_server

from osworld_gym import load_tasks
from osworld_gym.policies.oracles.ui_basics import SUITE, oracle_responses


def _answer(body: dict[str, Any], instructions: dict[str, str]) -> str:
    conversation = json.dumps(body["messages"])
    for task_id, instruction in instructions.items():
        if instruction in conversation:
            turn = sum(message["role"] == "assistant" for message in body["messages"])
            responses = oracle_responses(task_id)
            return responses[min(turn, len(responses) - 1)]
    raise LookupError("no ui-basics instruction in the conversation")


def _completion(text: str, model: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@contextlib.contextmanager
def scripted_endpoint() -> collections.abc.Iterator[str]:
    """Serve the endpoint on a free loopback port; yield its base URL (``.../v1``)."""
    # The instruction as it appears inside the JSON text of the messages.
    instructions = {task.id: json.dumps(task.instruction)[1:-1] for task in load_tasks(SUITE)}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet test output
            pass

        def do_GET(self) -> None:  # noqa: N802 - the handler API
            self._send(200, {"object": "list", "data": [{"id": "oracle", "object": "model"}]})

        def do_POST(self) -> None:  # noqa: N802 - the handler API
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                text = _answer(body, instructions)
            except LookupError as error:
                self._send(400, {"error": {"message": str(error)}})
                return
            self._send(200, _completion(text, body.get("model", "oracle")))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with loopback_server(Handler) as url:
        yield f"{url}/v1"
