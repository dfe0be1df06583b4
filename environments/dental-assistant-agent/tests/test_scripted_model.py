"""The scripted endpoint speaks OpenAI chat completions, streamed (SSE) or not.

Stock harnesses (the bundled `null` one included) stream every model call, so a
non-streaming endpoint would fail them on the first turn.
"""

import asyncio
import json

import pytest
import verifiers.v1 as vf
from dental_assistant_agent.clinic import ClinicRecord, apply_action
from dental_assistant_agent.offline import case_of
from dental_assistant_agent.policies import next_message
from dental_assistant_agent.scripted_model import scripted_model
from dental_assistant_agent.taskset import DentalAssistantConfig, DentalAssistantTaskset
from openai import AsyncOpenAI, NotFoundError


def _transcripts() -> list[list[dict]]:
    """The reference's whole call on one case, cut before each of its replies: tool calls
    are due at every cut but the last, where the closing text reply is due."""
    case = case_of("routine_review")
    messages: list[dict] = [{"role": "user", "content": case.opening_message}]
    record, cuts = ClinicRecord(), []
    while True:
        cuts.append(list(messages))
        message = next_message("reference", messages)
        if not message.get("tool_calls"):
            return cuts
        messages.append(message)
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"])
            record, reply = apply_action(case, record, arguments["action"], arguments["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": reply})


async def _streamed_and_plain(messages: list[dict]) -> tuple[dict, str, dict, str]:
    async with scripted_model() as base_url:
        client = AsyncOpenAI(base_url=base_url, api_key="unused")
        plain = await client.chat.completions.create(model="reference", messages=messages)
        async with client.chat.completions.stream(
            model="reference", messages=messages, stream_options={"include_usage": True}
        ) as stream:
            async for _ in stream:
                pass
            streamed = await stream.get_final_completion()
    return (
        streamed.choices[0].message.model_dump(exclude_none=True, exclude={"parsed"}),
        streamed.choices[0].finish_reason,
        plain.choices[0].message.model_dump(exclude_none=True),
        plain.choices[0].finish_reason,
    )


@pytest.mark.parametrize("turn", [0, -1])
def test_streamed_reply_carries_the_same_message_as_the_plain_one(turn):
    messages = _transcripts()[turn]
    streamed, streamed_finish, plain, plain_finish = asyncio.run(_streamed_and_plain(messages))
    expected = next_message("reference", messages)
    assert streamed_finish == plain_finish == ("tool_calls" if turn == 0 else "stop")
    assert streamed.get("content") == plain.get("content") == expected.get("content")
    for message in (streamed, plain):
        calls = [
            (call["id"], call["function"]["name"], call["function"]["arguments"])
            for call in message.get("tool_calls") or []
        ]
        assert calls == [
            (call["id"], call["function"]["name"], call["function"]["arguments"])
            for call in expected.get("tool_calls") or []
        ]


async def _unknown_policy() -> None:
    async with scripted_model() as base_url:
        client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
        await client.chat.completions.create(
            model="no-such-policy", messages=[{"role": "user", "content": "hi"}], stream=True
        )


def test_unknown_policy_is_a_clear_error_even_when_streaming():
    with pytest.raises(NotFoundError, match="no-such-policy"):
        asyncio.run(_unknown_policy())


async def _null_harness_rollout() -> vf.Trace:
    config = DentalAssistantConfig(eval_variants=1)
    task = next(iter(DentalAssistantTaskset(config)))
    async with (
        scripted_model() as base_url,
        vf.mcp.serve_shared(DentalAssistantTaskset.toolsets(config)) as shared,
    ):
        agent = vf.Agent(
            vf.AgentConfig.model_validate(
                {
                    "model": "reference",
                    "harness": {"id": "null"},
                    "runtime": {"type": "subprocess"},
                    "client": vf.EvalClientConfig(
                        base_url=base_url, api_key_var="UNSET_SCRIPTED_KEY"
                    ),
                }
            )
        )
        return await agent.run(task, tools=shared)


def test_the_stock_null_harness_scores_a_case_against_the_endpoint():
    trace = asyncio.run(_null_harness_rollout())
    assert trace.errors == [], [error.message for error in trace.errors]
    assert trace.reward == 1.0 and trace.stop_condition == "handoff_submitted"
