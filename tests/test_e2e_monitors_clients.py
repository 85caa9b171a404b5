"""End to end: the Python client's monitors (``Scrapespy.create_monitor`` and friends, and the
async twin) and the MCP server's monitor tools, against the real service scraping the local
site. A monitor's first run is due at once: its check comes at the service's next tick."""

from __future__ import annotations

import time

import pytest
from mcp import ClientSession
from mcp.types import CallToolResult
from scrapespy import AsyncScrapespy, Monitor, MonitorCheck, NotFound, Scrapespy

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite
from tests.test_client_async import run
from tests.test_mcp import in_session, text_of

CHECK_WAIT = 60  # seconds: the default tick is 5 s, and the run is a job on a busy machine


def first_check(client: Scrapespy, monitor_id: str) -> MonitorCheck:
    deadline = time.monotonic() + CHECK_WAIT
    while True:
        items = client.monitor_checks(monitor_id).items
        if items and items[-1].status != "running":
            return items[-1]
        assert time.monotonic() < deadline, items
        time.sleep(0.2)


def test_the_client_makes_reads_pauses_resumes_and_deletes_a_monitor(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    site.page("/client-monitor", "<html><head><title>Watched</title></head><body>hi</body></html>")
    url = site.url("/client-monitor")
    with Scrapespy(api_key=key, base_url=service.base) as client:
        made = client.create_monitor(url, schedule=3600, name="watched", formats=["markdown"])
        assert isinstance(made, Monitor)
        assert (made.url, made.schedule, made.status, made.name) == (url, 3600, "active", "watched")
        assert made.options == {"formats": ["markdown"]}
        check = first_check(client, made.id)
        assert check.status == "completed" and check.credits_charged == 1
        assert check.results[0].url == url and check.results[0].status == "done"
        assert [m.id for m in client.monitors().items] == [made.id]
        assert client.monitor(made.id).last_check is not None
        paused = client.pause_monitor(made.id)
        assert paused.status == "paused" and paused.next_run_at is None
        resumed = client.resume_monitor(made.id)
        assert resumed.status == "active" and resumed.next_run_at is not None
        moved = client.update_monitor(made.id, schedule="0 6 * * *")
        assert moved.schedule == "0 6 * * *" and moved.next_run_at is not None
        assert moved.next_run_at.hour == 6 and moved.next_run_at.minute == 0
        assert client.delete_monitor(made.id).deleted is True
        with pytest.raises(NotFound):
            client.monitor(made.id)
    assert accounts.summary(account_id)["balance"] == 9


def test_the_async_client_makes_and_lists_monitors(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    url = site.url("/article")

    async def steps() -> tuple[Monitor, list[str], bool]:
        async with AsyncScrapespy(api_key=key, base_url=service.base) as client:
            made = await client.create_monitor(url, schedule=600)
            listed = [m.id for m in (await client.monitors()).items]
            await client.pause_monitor(made.id)
            checks = await client.monitor_checks(made.id)
            gone = (await client.delete_monitor(made.id)).deleted
            assert isinstance(checks.items, list)
            return made, listed, gone

    made, listed, gone = run(steps)
    assert made.schedule == 600 and listed == [made.id] and gone


def test_the_mcp_tools_watch_a_page(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    url = site.url("/article")

    async def steps(client: ClientSession) -> dict[str, CallToolResult]:
        answers: dict[str, CallToolResult] = {}
        made = await client.call_tool("create_monitor", {"url": url, "schedule_seconds": 3600})
        answers["create_monitor"] = made
        assert made.structured_content is not None, text_of(made)
        monitor_id = made.structured_content["id"]
        answers["list_monitors"] = await client.call_tool("list_monitors", {})
        for name in ("pause_monitor", "resume_monitor", "get_monitor", "monitor_checks"):
            answers[name] = await client.call_tool(name, {"monitor_id": monitor_id})
        answers["delete_monitor"] = await client.call_tool(
            "delete_monitor", {"monitor_id": monitor_id}
        )
        answers["missing"] = await client.call_tool("get_monitor", {"monitor_id": monitor_id})
        return answers

    answers = in_session(service.base, key, steps)
    found = {name: answer.structured_content or {} for name, answer in answers.items()}
    made = found["create_monitor"]
    assert made["schedule"] == 3600 and made["url"] == url and made["status"] == "active"
    assert [item["id"] for item in found["list_monitors"]["items"]] == [made["id"]]
    assert found["pause_monitor"]["status"] == "paused"
    assert found["resume_monitor"]["status"] == "active"
    assert found["get_monitor"]["id"] == made["id"]
    assert isinstance(found["monitor_checks"]["items"], list)
    assert found["delete_monitor"] == {"id": made["id"], "deleted": True}
    missing = answers["missing"]
    assert missing.is_error and "no such monitor" in text_of(missing)
