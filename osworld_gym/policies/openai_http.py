"""A rollout engine over an OpenAI-compatible chat-completions server (vLLM's, and others).

For evaluating a served model: the text and, when the server returns them, the sampled tokens'
log-probabilities come back; **token ids do not** (the chat API returns text), so
``Generation.token_ids`` stays empty and trajectories it produces cannot be trained on
token-exactly.

Requests of a batch run concurrently on a bounded thread pool. Connection failures, 429 and 5xx
answers are retried with exponential back-off; every other failure raises at once a subclass of
``OpenAIEngineError`` naming the URL, the HTTP status and what the server said.

vLLM fills request fields left out from the model's ``generation_config.json``; this engine
sends temperature, top_p, max_tokens and (when set) top_k and seed explicitly. Pass
``extra_body={"top_k": -1}`` to switch off a top-k the model's config would impose.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from types import TracebackType
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from osworld_gym.policies.conversation import Conversation, ImagePart, TextPart
from osworld_gym.policies.engine import Generation, SamplingParams

logger = logging.getLogger(__name__)

__all__ = [
    "OpenAIConnectionError",
    "OpenAIEngine",
    "OpenAIEngineError",
    "OpenAIResponseError",
    "OpenAIStatusError",
    "OpenAITimeoutError",
    "to_openai_messages",
]

_BODY_EXCERPT = 300  # characters of a bad answer quoted in errors


class OpenAIEngineError(RuntimeError):
    """A chat-completions request failed.

    Attributes:
        url: The endpoint called.
        status: The HTTP status of the last answer, None when there was none.
    """

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class OpenAIStatusError(OpenAIEngineError):
    """The server answered with an error status (4xx at once; 429 or 5xx after the retries)."""


class OpenAIConnectionError(OpenAIEngineError):
    """No connection to the server could be made, after the retries."""


class OpenAITimeoutError(OpenAIEngineError):
    """The server took the request but did not answer within the read timeout."""


class OpenAIResponseError(OpenAIEngineError):
    """The server answered 2xx with a body that is not a chat completion."""


def to_openai_messages(conversation: Conversation) -> list[dict[str, Any]]:
    """Render a conversation as chat-completions ``messages``.

    A text-only turn becomes a plain string; a turn with images becomes a list of ``text`` and
    ``image_url`` parts, each image a base64 data URI of its own MIME type. Assistant turns are
    sent as their text (box tokens included): the API cannot take token ids.

    Example:
        >>> conv = Conversation()
        >>> conv.add("user", TextPart("hi"))
        >>> to_openai_messages(conv)
        [{'role': 'user', 'content': 'hi'}]
    """
    messages: list[dict[str, Any]] = []
    for turn in conversation.turns:
        if not turn.images:
            messages.append({"role": turn.role, "content": turn.text})
            continue
        parts: list[dict[str, Any]] = []
        for part in turn.parts:
            if isinstance(part, TextPart):
                parts.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                url = f"data:{part.mime_type};base64,{base64.b64encode(part.data).decode('ascii')}"
                parts.append({"type": "image_url", "image_url": {"url": url}})
        messages.append({"role": turn.role, "content": parts})
    return messages


class OpenAIEngine:
    """Generates completions by calling ``POST {base_url}/chat/completions``.

    Args:
        base_url: The API root, e.g. ``"http://127.0.0.1:8000/v1"`` (a URL already ending in
            ``/chat/completions`` is used as is).
        model: The served model name (vLLM's ``--served-model-name``).
        api_key: Bearer token; None: read from the ``api_key_env`` variable, if set there.
        api_key_env: Environment variable holding the key (None: never read one).
        max_concurrency: Requests of a batch in flight at once.
        connect_timeout: Seconds to wait for a TCP connection.
        read_timeout: Seconds to wait for the answer once connected (a whole generation).
        max_retries: Retries of a request after a connection error, 429 or 5xx.
        backoff: Seconds before the first retry; doubled for each further one.
        max_backoff: Cap on one back-off wait (also on a server's ``Retry-After``).
        retry_read_timeouts: Also retry when the read timeout expires. Off by default: the
            server may still be generating, and a retry would queue the same work twice.
        request_logprobs: Ask for the sampled tokens' log-probabilities.
        extra_body: More request fields, sent as given (e.g. vLLM's ``top_k`` or
            ``skip_special_tokens``); they override the engine's own.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        connect_timeout: float = 10.0,
        read_timeout: float = 600.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        retry_read_timeouts: bool = False,
        request_logprobs: bool = True,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if max_concurrency < 1 or max_retries < 0:
            raise ValueError("max_concurrency must be >= 1 and max_retries >= 0")
        if connect_timeout <= 0 or read_timeout <= 0 or backoff < 0 or max_backoff < 0:
            raise ValueError("timeouts must be > 0 and back-off times >= 0")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        root = base_url.rstrip("/")
        self.url = root if root.endswith("/chat/completions") else f"{root}/chat/completions"
        self.model = model
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env) or None
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.max_concurrency = max_concurrency
        self.timeout = (connect_timeout, read_timeout)
        self.max_retries, self.backoff, self.max_backoff = max_retries, backoff, max_backoff
        self.retry_read_timeouts = retry_read_timeouts
        self.request_logprobs = request_logprobs
        self.extra_body = dict(extra_body or {})
        self._pool = ThreadPoolExecutor(max_concurrency, thread_name_prefix="openai-engine")
        # requests.Session is not documented as thread-safe: one per worker thread.
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._sessions_lock = threading.Lock()
        self._closed = threading.Event()  # also wakes back-off waits on close()

    def __repr__(self) -> str:
        # The key stays out of reprs and logs.
        return f"OpenAIEngine(url={self.url!r}, model={self.model!r})"

    # --- RolloutEngine ---------------------------------------------------------------------

    def generate(
        self,
        conversations: Sequence[Conversation],
        params: SamplingParams,
        seeds: Sequence[int] | None = None,
    ) -> list[Generation]:
        """One completion per conversation, in order, requested concurrently.

        Each request carries ``seeds[i]`` when given, else ``params.seed`` (when set).

        Raises:
            OpenAIEngineError: A request failed (the first failure in batch order; the other
                requests are finished first, so none is left running).
            RuntimeError: The engine is closed.
            ValueError: ``seeds`` does not have one seed per conversation.
        """
        if self._closed.is_set():
            raise RuntimeError(f"{self!r} is closed")
        if seeds is not None and len(seeds) != len(conversations):
            raise ValueError(f"{len(seeds)} seeds for {len(conversations)} conversations")
        per_request = (
            [params] * len(conversations)
            if seeds is None
            else [dataclasses.replace(params, seed=seed) for seed in seeds]
        )
        futures: list[Future[Generation]] = [
            self._pool.submit(self._complete, conversation, request_params)
            for conversation, request_params in zip(conversations, per_request, strict=True)
        ]
        wait_futures(futures)
        errors = [error for f in futures if (error := f.exception()) is not None]
        if errors:
            if len(errors) > 1:
                logger.warning(
                    "%d of %d requests to %s failed", len(errors), len(futures), self.url
                )
            raise errors[0]
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the worker threads and close the connections (idempotent)."""
        self._closed.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._sessions_lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()

    def __enter__(self) -> OpenAIEngine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- one request -----------------------------------------------------------------------

    def request_body(self, conversation: Conversation, params: SamplingParams) -> dict[str, Any]:
        """The JSON body sent for one conversation."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(conversation),
            "n": 1,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_new_tokens,
        }
        if params.top_k:  # not an OpenAI field: sent only when it changes something
            body["top_k"] = params.top_k
        if params.seed is not None:
            body["seed"] = params.seed
        if self.request_logprobs:
            body["logprobs"] = True
        body.update(self.extra_body)
        return body

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            # urllib3's own retries are off: the loop in _post decides what is retried.
            adapter = HTTPAdapter(pool_maxsize=1, max_retries=0)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
            with self._sessions_lock:
                self._sessions.append(session)
        return session

    def _complete(self, conversation: Conversation, params: SamplingParams) -> Generation:
        body = self.request_body(conversation, params)
        start = time.perf_counter()
        payload, attempts = self._post(body)
        generation = _parse_completion(payload, self.url)
        generation.extra.update(attempts=attempts, seconds=time.perf_counter() - start)
        return generation

    def _post(self, body: dict[str, Any]) -> tuple[Any, int]:
        """POST with retries; return the decoded JSON answer and the attempts it took."""
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                response = self._session().post(
                    self.url, json=body, headers=self._headers, timeout=self.timeout
                )
            except requests.exceptions.ReadTimeout as e:
                problem: OpenAIEngineError = OpenAITimeoutError(
                    f"{self.url}: no answer within the read timeout of {self.timeout[1]} s",
                    url=self.url,
                )
                if not self.retry_read_timeouts:
                    raise problem from e
                cause: BaseException = e
            except (
                requests.exceptions.ConnectionError,
                requests.exceptions.ChunkedEncodingError,
            ) as e:
                problem = OpenAIConnectionError(
                    f"cannot reach {self.url} ({type(e).__name__}: {e}); is the server up?",
                    url=self.url,
                )
                cause = e
            else:
                status = response.status_code
                if status < 400:
                    return _decode_json(response, self.url), attempt + 1
                problem = OpenAIStatusError(
                    f"{self.url} answered HTTP {status}: {_error_detail(response)}",
                    url=self.url,
                    status=status,
                )
                if status != 429 and status < 500:
                    raise problem  # the request itself is wrong: retrying cannot help
                cause = problem
                retry_after = _retry_after(response)
            if attempt == self.max_retries:
                raise type(problem)(
                    f"{problem} (gave up after {attempt + 1} attempts)",
                    url=self.url,
                    status=problem.status,
                ) from cause
            if retry_after is None:
                retry_after = self.backoff * 2**attempt
            delay = min(self.max_backoff, retry_after)
            logger.warning(
                "%s (attempt %d of %d); retrying in %.2f s",
                problem,
                attempt + 1,
                self.max_retries + 1,
                delay,
            )
            if self._closed.wait(delay):
                raise OpenAIConnectionError(
                    f"{self.url}: engine closed while retrying", url=self.url
                ) from cause
        raise AssertionError("unreachable")


# --- answers ---------------------------------------------------------------------------------


def _decode_json(response: requests.Response, url: str) -> Any:
    try:
        return response.json()
    except ValueError as e:
        raise OpenAIResponseError(
            f"{url} answered HTTP {response.status_code} with a body that is not JSON: "
            f"{response.text[:_BODY_EXCERPT]!r}",
            url=url,
            status=response.status_code,
        ) from e


def _error_detail(response: requests.Response) -> str:
    """The server's own error message, or the start of its body."""
    try:
        payload = response.json()
    except ValueError:
        return repr(response.text[:_BODY_EXCERPT])
    if isinstance(payload, Mapping):
        error = payload.get("error", payload)
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])[:_BODY_EXCERPT]
        if isinstance(error, str):
            return error[:_BODY_EXCERPT]
    return repr(response.text[:_BODY_EXCERPT])


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own back-off


def _parse_completion(payload: Any, url: str) -> Generation:
    """Read the first choice of a chat completion into a ``Generation``."""

    def bad(what: str) -> OpenAIResponseError:
        excerpt = repr(payload)[:_BODY_EXCERPT]
        return OpenAIResponseError(f"{url}: {what} in the answer {excerpt}", url=url)

    if not isinstance(payload, Mapping):
        raise bad("expected a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        detail = _error_detail_from(payload)
        raise bad("no 'choices'" + (f" (server error: {detail})" if detail else ""))
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise bad("no 'message' in the first choice")
    content = message.get("content")
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    if content is not None and not isinstance(content, str):
        raise bad("'content' is neither text nor null")
    usage = payload.get("usage")
    prompt_tokens = usage.get("prompt_tokens") if isinstance(usage, Mapping) else None
    return Generation(
        text=content or "",
        token_ids=[],  # the chat API returns text, not ids
        logprobs=_logprobs(choice.get("logprobs"), bad),
        finish_reason=_finish_reason(choice.get("finish_reason")),
        prompt_tokens=int(prompt_tokens) if isinstance(prompt_tokens, int) else None,
        extra={"id": payload.get("id"), "model": payload.get("model")},
    )


def _error_detail_from(payload: Mapping[str, Any]) -> str | None:
    error = payload.get("error")
    if isinstance(error, Mapping):
        return str(error.get("message") or error)[:_BODY_EXCERPT]
    return str(error)[:_BODY_EXCERPT] if error else None


def _logprobs(value: Any, bad: Callable[[str], OpenAIResponseError]) -> list[float] | None:
    """``choices[0].logprobs.content[*].logprob``, or None when the server sent none."""
    if value is None:
        return None
    entries = value.get("content") if isinstance(value, Mapping) else None
    if entries is None:
        return None
    try:
        return [float(entry["logprob"]) for entry in entries]
    except (TypeError, KeyError, ValueError) as e:
        raise bad("malformed 'logprobs'") from e


def _finish_reason(value: Any) -> str:
    # "stop" and "length" are what Generation documents; anything else ("abort",
    # "content_filter", ...) is passed on as the server said it.
    if value is None:
        return "stop"
    return str(value)
