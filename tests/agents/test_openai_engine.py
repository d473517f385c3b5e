"""OpenAIEngine against a real HTTP server on 127.0.0.1 answering like an OpenAI-compatible one."""

from __future__ import annotations

import base64
import json
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from osworld_agents.engines import Conversation, ImagePart, RolloutEngine, SamplingParams, TextPart

from osworld_gym.policies.openai_http import (
    OpenAIConnectionError,
    OpenAIEngine,
    OpenAIEngineError,
    OpenAIResponseError,
    OpenAIStatusError,
    OpenAITimeoutError,
    to_openai_messages,
)
from osworld_gym.pool import encode_screenshot

logger = logging.getLogger(__name__)

# A handler answer: (status, body, headers). "hang" keeps the client waiting instead.
Answer = tuple[int, bytes, dict[str, str]]
Script = Callable[[dict[str, Any]], Answer | str]
DEADLINE = 10.0  # seconds any wait inside the fake server may take at most


def completion(
    text: str = "Thought: ok\nAction: wait()",
    logprobs: list[float] | None = None,
    finish: str | None = "stop",
) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": finish,
        "logprobs": None,
    }
    if logprobs is not None:
        choice["logprobs"] = {
            "content": [
                {"token": f"t{i}", "logprob": lp, "bytes": [116], "top_logprobs": []}
                for i, lp in enumerate(logprobs)
            ]
        }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "ui-tars",
        "choices": [choice],
        "usage": {"prompt_tokens": 2700, "completion_tokens": 3, "total_tokens": 2703},
    }


def ok(payload: dict[str, Any] | None = None, status: int = 200, **headers: str) -> Answer:
    return status, json.dumps(payload or completion()).encode(), headers


class FakeServer:
    """A threaded HTTP server; each POST takes the next scripted answer (default: a completion)."""

    def __init__(self) -> None:
        self.script: deque[Script] = deque()
        self.default: Script = lambda body: ok()
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()  # ends "hang" answers
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                with server.lock:
                    server.received.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body}
                    )
                    script = server.script.popleft() if server.script else server.default
                answer = script(body)  # outside the lock: answers may wait for each other
                if answer == "hang":
                    server.release.wait(DEADLINE)
                    return
                status, payload, headers = answer
                try:
                    self.send_response(status)
                    for name, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up on this request
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                logger.debug("fake server: " + format, *args)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(DEADLINE)


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.stop()


def engine_for(url: str, **kwargs: Any) -> OpenAIEngine:
    options: dict[str, Any] = {"api_key_env": None, "backoff": 0.01, "max_retries": 2}
    options.update(kwargs)
    return OpenAIEngine(url, "ui-tars", **options)


def image(fmt: str) -> ImagePart:
    data = encode_screenshot(np.full((28, 56, 3), 7, np.uint8), fmt)
    return ImagePart(data, 56, 28)


def chat() -> Conversation:
    conversation = Conversation()
    conversation.add("system", TextPart("Your are a helpful assistant."))
    conversation.add("user", TextPart("## User Instruction\nopen it"))
    conversation.add("user", image("png"))
    conversation.add(
        "assistant",
        TextPart("Thought: a\nAction: click(start_box='<|box_start|>(1,2)<|box_end|>')"),
        token_ids=(11, 12),
    )
    conversation.add("user", image("jpeg"))
    return conversation


# --- requests and answers --------------------------------------------------------------------


def test_request_body_and_parsed_answer(server):
    server.default = lambda body: ok(completion("Thought: t\nAction: wait()", [-0.5, -0.25, 0.0]))
    params = SamplingParams(temperature=0.6, top_p=0.9, top_k=5, max_new_tokens=100, seed=3)
    with engine_for(server.url, api_key="secret") as engine:
        assert isinstance(engine, RolloutEngine)
        (generation,) = engine.generate([chat()], params)

    (request,) = server.received
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer secret"
    body = request["body"]
    assert body["model"] == "ui-tars" and body["n"] == 1
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.6, 0.9, 100)
    assert body["top_k"] == 5 and body["seed"] == 3 and body["logprobs"] is True
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "user", "assistant", "user"]
    assert messages[0]["content"] == "Your are a helpful assistant."
    assert messages[3]["content"].endswith("click(start_box='<|box_start|>(1,2)<|box_end|>')")
    expected = ((messages[2], "png", "image/png"), (messages[4], "jpeg", "image/jpeg"))
    for message, fmt, mime in expected:
        (part,) = message["content"]
        assert part["type"] == "image_url"
        prefix = f"data:{mime};base64,"
        assert part["image_url"]["url"].startswith(prefix)
        assert base64.b64decode(part["image_url"]["url"][len(prefix) :]) == image(fmt).data

    assert generation.text == "Thought: t\nAction: wait()"
    assert generation.logprobs == [-0.5, -0.25, 0.0]
    assert generation.token_ids == []  # the chat API returns no ids
    assert generation.finish_reason == "stop" and generation.prompt_tokens == 2700
    assert generation.extra["attempts"] == 1 and generation.extra["id"] == "chatcmpl-1"


def test_per_conversation_seeds(server):
    server.default = lambda body: ok(completion("Thought: t\nAction: wait()", [-0.5]))
    with engine_for(server.url) as engine:
        engine.generate([chat(), chat()], SamplingParams(seed=3), seeds=[11, 12])
        with pytest.raises(ValueError, match="1 seeds for 2 conversations"):
            engine.generate([chat(), chat()], SamplingParams(), seeds=[11])
    assert sorted(request["body"]["seed"] for request in server.received) == [11, 12]


def test_optional_fields_are_left_out(server, monkeypatch):
    monkeypatch.setenv("OSWORLD_TEST_API_KEY", "from-env")
    with engine_for(server.url, api_key_env="OSWORLD_TEST_API_KEY") as engine:
        engine.generate([chat()], SamplingParams())
    with engine_for(server.url, request_logprobs=False, extra_body={"top_k": -1}) as engine:
        engine.generate([chat()], SamplingParams())
    with_key, plain = server.received
    assert with_key["headers"]["Authorization"] == "Bearer from-env"
    assert "seed" not in with_key["body"] and "top_k" not in with_key["body"]
    assert "Authorization" not in plain["headers"]
    assert "logprobs" not in plain["body"] and plain["body"]["top_k"] == -1


def test_length_finish_and_missing_logprobs(server):
    server.default = lambda body: ok(completion("Thought: cut", None, "length"))
    with engine_for(server.url) as engine:
        (generation,) = engine.generate([chat()], SamplingParams())
    assert generation.finish_reason == "length" and generation.logprobs is None


def test_batch_runs_concurrently_and_keeps_order(server):
    both_in_flight = threading.Barrier(2, timeout=DEADLINE)

    def answer(body: dict[str, Any]) -> Answer:
        both_in_flight.wait()  # breaks (and the test fails) unless two requests overlap
        return ok(completion(f"echo {body['messages'][0]['content']}"))

    server.default = answer
    conversations = []
    for i in range(4):
        conversation = Conversation()
        conversation.add("user", TextPart(str(i)))
        conversations.append(conversation)
    with engine_for(server.url, max_concurrency=2) as engine:
        generations = engine.generate(conversations, SamplingParams())
    assert [g.text for g in generations] == ["echo 0", "echo 1", "echo 2", "echo 3"]


def test_turn_with_images_keeps_its_part_order():
    conversation = Conversation()
    conversation.add("user", TextPart("a"), image("png"), TextPart("b"))
    (message,) = to_openai_messages(conversation)
    assert [part["type"] for part in message["content"]] == ["text", "image_url", "text"]


# --- failures ----------------------------------------------------------------------------------


def test_500_then_200_is_retried(server):
    server.script.append(lambda body: ok({"error": {"message": "busy"}}, status=500))
    with engine_for(server.url) as engine:
        (generation,) = engine.generate([chat()], SamplingParams())
    assert len(server.received) == 2 and generation.extra["attempts"] == 2


def test_429_honours_retry_after(server):
    retry_now = {"Retry-After": "0"}
    server.script.append(lambda body: ok({"error": "slow down"}, status=429, **retry_now))
    with engine_for(server.url, backoff=5.0) as engine:  # Retry-After 0 overrides the 5 s
        start = time.monotonic()
        engine.generate([chat()], SamplingParams())
    assert len(server.received) == 2 and time.monotonic() - start < 4


def test_persistent_5xx_gives_up_after_the_retries(server):
    server.default = lambda body: ok({"error": {"message": "model crashed"}}, status=503)
    with engine_for(server.url, max_retries=2) as engine:
        with pytest.raises(OpenAIStatusError) as caught:
            engine.generate([chat()], SamplingParams())
    assert caught.value.status == 503 and len(server.received) == 3
    assert "model crashed" in str(caught.value) and "3 attempts" in str(caught.value)


def test_400_is_a_clear_error_and_not_retried(server):
    message = "This model's maximum context length is 65536 tokens"
    server.default = lambda body: ok({"error": {"message": message, "code": 400}}, status=400)
    with engine_for(server.url) as engine:
        with pytest.raises(OpenAIStatusError) as caught:
            engine.generate([chat()], SamplingParams())
    error = caught.value
    assert error.status == 400 and error.url == f"{server.url}/chat/completions"
    assert message in str(error) and "HTTP 400" in str(error) and error.url in str(error)
    assert len(server.received) == 1


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"<html>bad gateway</html>", "not JSON"),
        (json.dumps({"object": "chat.completion", "choices": []}).encode(), "no 'choices'"),
        (json.dumps({"error": {"message": "oops"}}).encode(), "server error: oops"),
        (json.dumps({"choices": [{"message": {"content": 5}}]}).encode(), "neither text"),
        (
            json.dumps(
                {"choices": [{"message": {"content": "x"}, "logprobs": {"content": [{}]}}]}
            ).encode(),
            "malformed 'logprobs'",
        ),
    ],
)
def test_malformed_answers_are_clear_errors(server, payload, match):
    server.default = lambda body: (200, payload, {})
    with engine_for(server.url) as engine:
        with pytest.raises(OpenAIResponseError, match=match) as caught:
            engine.generate([chat()], SamplingParams())
    assert server.url in str(caught.value) and len(server.received) == 1


def test_connection_refused_after_bounded_retries():
    # A bound socket that does not listen refuses connections for as long as it is held.
    with socket.socket() as closed_port:
        closed_port.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed_port.getsockname()[1]}/v1"
        with engine_for(url, max_retries=2, connect_timeout=2.0) as engine:
            start = time.monotonic()
            with pytest.raises(OpenAIConnectionError) as caught:
                engine.generate([chat()], SamplingParams())
    assert isinstance(caught.value, OpenAIEngineError)
    assert url in str(caught.value) and "3 attempts" in str(caught.value)
    assert caught.value.status is None and time.monotonic() - start < 5


def test_read_timeout_is_a_clear_error_and_not_retried(server):
    server.default = lambda body: "hang"
    with engine_for(server.url, read_timeout=0.3) as engine:
        start = time.monotonic()
        with pytest.raises(OpenAITimeoutError, match="read timeout of 0.3 s"):
            engine.generate([chat()], SamplingParams())
    assert time.monotonic() - start < 5 and len(server.received) == 1


def test_read_timeouts_can_be_retried(server):
    server.script.append(lambda body: "hang")
    with engine_for(server.url, read_timeout=0.3, retry_read_timeouts=True) as engine:
        (generation,) = engine.generate([chat()], SamplingParams())
    assert len(server.received) == 2 and generation.extra["attempts"] == 2


def test_closed_engine_refuses_work(server):
    engine = engine_for(server.url)
    engine.close()
    engine.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        engine.generate([chat()], SamplingParams())
    assert "secret" not in repr(engine_for(server.url, api_key="secret"))
