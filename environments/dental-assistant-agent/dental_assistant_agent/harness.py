"""An in-process chat harness: the model loop runs on the host, tools stay on MCP.

The bundled `null` harness does the same loop in a uv script subprocess, which costs a
package sync and ~10 s of interpreter start per rollout here. This loop keeps the contract:
every model call goes through the rollout's interception endpoint (so turns, limits and
`@stop`s apply) and every tool call goes to the tool server over MCP.
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack

import httpx
import verifiers.v1 as vf
from verifiers.v1.harnesses.utils.mcp import call_mcp, connect_mcp

from dental_assistant_agent.arguments import shown


class InProcessChatConfig(vf.HarnessConfig):
    id: str = "dental-assistant-agent"
    request_timeout: float = 600.0
    """Seconds one model call may take."""


class InProcessChatHarness(vf.Harness[InProcessChatConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> vf.ProgramResult:
        system, prompt = self.resolve_text_prompt(data)
        messages: list[dict] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt or ""})
        servers = {
            name: {"url": url, "timeout": self.config.tool_timeout}
            for name, url in mcp_urls.items()
        }
        async with AsyncExitStack() as stack:
            tools, dispatch, connections = await connect_mcp({"mcpServers": servers}, stack)
            http = await stack.enter_async_context(
                httpx.AsyncClient(timeout=httpx.Timeout(self.config.request_timeout, connect=5.0))
            )
            while trace.stop_condition is None:
                response = await http.post(
                    f"{endpoint.rstrip('/')}/chat/completions",
                    json={"model": ctx.model, "messages": messages, "tools": tools},
                    headers={"Authorization": f"Bearer {secret}"},
                )
                if response.status_code >= 400:
                    if trace.stop_condition is not None:
                        break  # a limit or @stop refused the turn: the run is over
                    raise vf.HarnessError(
                        f"model call failed ({response.status_code}): {response.text}"
                    )
                message = response.json()["choices"][0]["message"]
                messages.append(message)
                for call in message.get("tool_calls") or []:
                    content = await self._run_tool(call, dispatch, connections)
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": content}
                    )
                if not message.get("tool_calls"):
                    break
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    @staticmethod
    async def _run_tool(call: dict, dispatch: dict, connections: dict) -> str:
        name = call["function"]["name"]
        try:
            arguments = json.loads(call["function"].get("arguments") or "{}")
        except RecursionError:
            return "error: tool arguments are nested too deeply"
        except ValueError as error:  # bad JSON, or an integer too long to convert
            return f"error: tool arguments are not valid JSON ({str(error)[:80]})"
        if not isinstance(arguments, dict):
            return "error: tool arguments must be a JSON object"
        if name not in dispatch:
            return f"error: unknown tool {shown(name)}"
        content = await call_mcp(connections, dispatch, name, arguments)
        return content if isinstance(content, str) else json.dumps(content)
