"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1, standing in for a model.

It answers `POST /v1/chat/completions` (streamed or not) from a script keyed by the film id in
the worklist prompt: on the first turn it calls the `bash` tool with the film's command, once
the command's output has come back it replies with plain text and so ends the episode. An
endpoint made with `failing=True` answers every request with HTTP 500, as a model provider that
is down would.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FILM_IN_PROMPT = re.compile(r"panoramic film (\S+)")


@dataclass
class ModelStandIn:
    url: str
    commands: dict[str, str]
    """Film id -> the bash command the scripted model runs for that film."""
    failing: bool = False
    requests: list[dict] = field(default_factory=list)


def reply_for(model: ModelStandIn, body: dict) -> dict:
    """The next assistant message: the film's bash call first, plain text after its result."""
    messages = body.get("messages", [])
    if any(message.get("role") == "tool" for message in messages):
        return {"role": "assistant", "content": "Report filed."}
    prompt = " ".join(
        part if isinstance(part, str) else json.dumps(part)
        for message in messages
        if message.get("role") == "user"
        for part in [message.get("content")]
    )
    found = FILM_IN_PROMPT.search(prompt)
    command = model.commands.get(found[1] if found else "", "true")
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def completion(body: dict, message: dict) -> dict:
    reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "standin"),
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def stream_events(body: dict, message: dict) -> Iterator[dict]:
    """The same completion as server-sent chunks: one delta, then the finish and usage."""
    base = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 0}
    base["model"] = body.get("model", "standin")
    delta = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": 0, **call} for call in message["tool_calls"]]
    yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    reason = "tool_calls" if message.get("tool_calls") else "stop"
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    yield {**base, "choices": [], "usage": usage}


class _Handler(BaseHTTPRequestHandler):
    model: ModelStandIn

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        return

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.model.requests.append(body)
        if self.model.failing or not self.path.endswith("/chat/completions"):
            error = {"error": {"message": "the stand-in model is down", "type": "server_error"}}
            self._send(500, json.dumps(error).encode(), "application/json")
            return
        message = reply_for(self.model, body)
        if body.get("stream"):
            events = "".join(
                f"data: {json.dumps(event)}\n\n" for event in stream_events(body, message)
            )
            self._send(200, (events + "data: [DONE]\n\n").encode(), "text/event-stream")
        else:
            self._send(200, json.dumps(completion(body, message)).encode(), "application/json")


@contextmanager
def model_standin(commands: dict[str, str], failing: bool = False) -> Iterator[ModelStandIn]:
    """Serve the scripted model on 127.0.0.1 for the duration of the block."""
    handler = type("Handler", (_Handler,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    model = ModelStandIn(f"http://127.0.0.1:{server.server_address[1]}/v1", commands, failing)
    handler.model = model
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
