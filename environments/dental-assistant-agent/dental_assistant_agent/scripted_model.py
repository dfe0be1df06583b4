"""A local OpenAI-compatible chat endpoint whose 'model' is a scripted policy.

The rollout's stock eval client relays each intercepted model call here, so a scripted
policy passes through the same interception, limits and trace as a real model would.
The model name selects the policy. Requests with `"stream": true` (what stock harnesses
send) get the reply as server-sent `chat.completion.chunk` events ending in `[DONE]`.
Binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from dental_assistant_agent.policies import POLICIES, next_message

USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "code": status}}, status=status)


def _chunks(policy: str, message: dict, finish: str, with_usage: bool) -> list[dict]:
    """The reply as stream chunks: role, then content or one chunk per tool call, then the
    finish reason, then (when asked for) usage with no choices, as OpenAI sends it."""
    head = {"id": "scripted", "object": "chat.completion.chunk", "created": 0, "model": policy}
    deltas: list[dict] = [{"role": "assistant"}]
    if message.get("content"):
        deltas.append({"content": message["content"]})
    deltas.extend(
        {"tool_calls": [{"index": index, **call}]}
        for index, call in enumerate(message.get("tool_calls") or [])
    )
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        for delta in deltas
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if with_usage:
        chunks.append({**head, "choices": [], "usage": USAGE})
    return chunks


async def _stream(request: web.Request, chunks: list[dict]) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    for chunk in chunks:
        await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


async def _complete(request: web.Request) -> web.StreamResponse:
    try:
        body = await request.json()
        messages = body["messages"]
    except (ValueError, KeyError, TypeError):
        return _error(400, "the request body must be a JSON object with a 'messages' list")
    policy = body.get("model")
    if policy not in POLICIES:
        return _error(404, f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    message = next_message(policy, messages)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    if body.get("stream"):
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return await _stream(request, _chunks(policy, message, finish, with_usage))
    return web.json_response(
        {
            "id": "scripted",
            "object": "chat.completion",
            "created": 0,
            "model": policy,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": USAGE,
        }
    )


@asynccontextmanager
async def scripted_model(port: int = 0) -> AsyncIterator[str]:
    """Serve the policies on 127.0.0.1 (`port` 0 picks a free one); yield the base URL
    (`.../v1`)."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _complete)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        bound = runner.addresses[0][1]
        yield f"http://127.0.0.1:{bound}/v1"
    finally:
        await runner.cleanup()


async def _serve_forever(port: int) -> None:
    async with scripted_model(port) as base_url:
        print(base_url, flush=True)
        await asyncio.Event().wait()


def main() -> None:
    """`python -m dental_assistant_agent.scripted_model [PORT]`: serve until interrupted;
    the first line printed is the base URL to pass as `--client.base-url`."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("port", nargs="?", type=int, default=0, help="0 picks a free port")
    port = parser.parse_args().port
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_forever(port))


if __name__ == "__main__":
    main()
