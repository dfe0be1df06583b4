"""Collecting the filed report from the agent's workspace at scoring time.

On the local subprocess runtime the workspace is a host folder, so the host reads the file
itself with the filing check's own rules (radreport.report_file_bytes): no command runs, a
link or FIFO is refused, and at most MAX_REPORT_BYTES + 1 bytes are read. Other runtimes
expose only `runtime.read`; verifiers 0.4.0 implements a size-capped read there with
`head -c` run inside the sandbox, so the cap bounds what reaches the host but the bytes are
whatever that command prints. Either way the host parses and validates them with
radreport.parse_report, and the reason a report does not count is kept on the trace.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import verifiers.v1 as vf
from verifiers.v1.runtimes.subprocess import SubprocessRuntime

from periapical_lesions.radreport import (
    MAX_REPORT_BYTES,
    NoReport,
    countable_lesions,
    decode_report,
    report_file_bytes,
)
from periapical_lesions.reply import parse_reply

REPORT_FILE = "report.json"
READ_WATCHDOG_SECONDS = 120
"""A read through a sandbox that has not finished by then (say, a FIFO under `head`) is given
up, and the film has no report."""


@dataclass(frozen=True)
class Filing:
    """What was filed: the lesions that count (None when nothing counts), how many reported
    lesions were dropped for failing their own checks, and why, in one line."""

    lesions: list[dict] | None
    status: str
    dropped: int = 0


def judged(document: object) -> Filing:
    """The scorer's reading of a parsed report: every lesion that passes its checks counts,
    the others are dropped with their problems named on the status line."""
    lesions, problems = countable_lesions(document)
    if lesions is None:
        return Filing(None, "invalid report: " + "; ".join(problems))
    if not problems:
        return Filing(lesions, f"valid report with {len(lesions)} lesion(s)")
    reported = document.get("lesions", []) if isinstance(document, dict) else []
    dropped = len(reported) - len(lesions)
    status = (
        f"invalid report: {'; '.join(problems)}; {len(lesions)} lesion(s) scored, {dropped} dropped"
    )
    return Filing(lesions, status, dropped)


async def workspace_bytes(runtime: vf.Runtime) -> bytes:
    """The report's bytes, read without a command where the workspace is on the host."""
    if isinstance(runtime, SubprocessRuntime) and runtime.workdir is not None:
        return await asyncio.to_thread(report_file_bytes, str(runtime.workdir / REPORT_FILE))
    try:
        # One byte past the limit lets parse_report say "over the limit" itself.
        return await runtime.read(REPORT_FILE, max_bytes=MAX_REPORT_BYTES + 1)
    except vf.SandboxError as error:
        raise NoReport(f"cannot be read through the runtime: {error}") from None


async def filed_in_workspace(runtime: vf.Runtime) -> Filing:
    """The final report.json, judged by the filing check's rules."""
    try:
        data = await asyncio.wait_for(workspace_bytes(runtime), READ_WATCHDOG_SECONDS)
    except NoReport as reason:
        return Filing(None, f"no report: {REPORT_FILE}: {reason}")
    except TimeoutError:
        return Filing(None, f"no report: reading {REPORT_FILE} did not finish")
    document, problems = await asyncio.to_thread(decode_report, data)
    if problems:
        return Filing(None, "invalid report: " + "; ".join(problems))
    return judged(document)


async def filed_in_reply(reply: str | None) -> Filing:
    """The last report in the agent's final reply (chat-reply harnesses). The reply is read
    in a worker thread: it may be long, and the event loop runs other rollouts meanwhile."""
    report = await asyncio.to_thread(parse_reply, reply or "")
    if report is None:
        return Filing(None, "no report: the final reply holds no report")
    return judged(report)
