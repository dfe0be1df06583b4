"""A local OpenAI-compatible chat endpoint whose 'model' is a scripted policy.

The rollout's stock eval client relays each intercepted model call here, so a scripted
policy passes through the same interception, limits and trace as a real model would.
The model name selects the policy. Binds 127.0.0.1 only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from dental_assistant_agent.policies import POLICIES, next_message


async def _complete(request: web.Request) -> web.Response:
    body = await request.json()
    if body.get("stream"):
        return web.json_response({"error": {"message": "streaming is not supported"}}, status=400)
    policy = body.get("model")
    if policy not in POLICIES:
        return web.json_response({"error": {"message": f"unknown policy {policy!r}"}}, status=404)
    message = next_message(policy, body["messages"])
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return web.json_response(
        {
            "id": "scripted",
            "object": "chat.completion",
            "created": 0,
            "model": policy,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )


@asynccontextmanager
async def scripted_model() -> AsyncIterator[str]:
    """Serve the policies; yield the base URL (`.../v1`)."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _complete)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()
