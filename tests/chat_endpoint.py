"""A scripted OpenAI-compatible chat endpoint on loopback: the UI-TARS agent without a model.

``chat_endpoint(reply)`` serves ``/v1/chat/completions`` (and ``/v1/models``) on a free
loopback port; ``reply`` turns each request's body into the assistant's text, and a
``LookupError`` from it answers 400. Requests are recorded, and ``before_answer`` runs first
(a test kills a desktop there, mid-episode).
"""

from __future__ import annotations

import collections.abc
import contextlib
import http.server
import json
from dataclasses import dataclass, field
from typing import Any

from http_helpers import loopback_server

Reply = collections.abc.Callable[[dict[str, Any]], str]


def assistant_turn(body: dict[str, Any]) -> int:
    """How many assistant messages the conversation holds: the turn being answered."""
    return sum(message["role"] == "assistant" for message in body["messages"])


def chat_completion(text: str, body: dict[str, Any]) -> dict[str, Any]:
    """A ``chat.completion`` object answering ``body`` with ``text``."""
    message = {"role": "assistant", "content": text}
    return {
        "id": f"c{assistant_turn(body)}",
        "object": "chat.completion",
        "model": body.get("model", "oracle"),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@dataclass
class ChatEndpoint:
    """A running endpoint: its base URL (``.../v1``) and what it was asked."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    before_answer: collections.abc.Callable[[dict[str, Any]], None] | None = None


@contextlib.contextmanager
def chat_endpoint(reply: Reply) -> collections.abc.Iterator[ChatEndpoint]:
    """Serve ``reply`` as a chat-completions endpoint until the block ends."""
    endpoint = ChatEndpoint()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet test output
            pass

        def do_GET(self) -> None:  # noqa: N802 - the handler API
            self._send(200, {"object": "list", "data": [{"id": "oracle", "object": "model"}]})

        def do_POST(self) -> None:  # noqa: N802 - the handler API
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            endpoint.requests.append(body)
            if endpoint.before_answer is not None:
                endpoint.before_answer(body)
            try:
                text = reply(body)
            except LookupError as error:
                self._send(400, {"error": {"message": str(error)}})
                return
            self._send(200, chat_completion(text, body))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with loopback_server(Handler) as url:
        endpoint.url = f"{url}/v1"
        yield endpoint
