"""Anti-bot pages scraped through the API: ``blocked`` is honest and blocked pages are free."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.extraction import extract

CORPUS = Path(__file__).with_name("antibot_corpus")
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
SKIPPED_HEADERS = {"content-length", "content-encoding", "transfer-encoding", "connection", "date"}


@pytest.mark.parametrize("fixture", sorted(MANIFEST))
def test_fixture_through_the_api(service, site, accounts, fixture):
    entry = MANIFEST[fixture]
    path = "/antibot/" + fixture
    headers = {k: v for k, v in entry["headers"].items() if k.lower() not in SKIPPED_HEADERS}
    site.page(path, (CORPUS / fixture).read_bytes(), entry["status"], **headers)
    account_id, key = accounts.create(credits=100)

    reply = service.scrape(key, {"url": site.url(path), "respect_robots": False})
    assert reply.status == 200
    result = reply.json
    expected = entry["expect"]
    assert result["blocked"] is (expected is not None), (fixture, result.get("block_reason"))
    assert result.get("block_reason") == expected
    assert result["status_code"] == entry["status"]
    balance = accounts.summary(account_id)["balance"]
    if expected is not None or not result["success"]:
        assert balance == 100
    else:
        assert balance == 99
    if "html" in headers.get("content-type", "text/html"):
        # every field is still built from what was received
        fields = extract((CORPUS / fixture).read_bytes(), site.url(path))
        for name in ("title", "meta", "headings", "links", "images", "text"):
            assert result[name] == fields[name], name
