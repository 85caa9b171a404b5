"""service.extraction.llm against a local stand-in of the chat-completions API, through the real
`openai` library: valid answers, invalid JSON and schema violations (retried once, then failed),
a timeout, a 429, a very long page (bounded input), concurrency, and the key kept out of logs."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from service.extraction.llm import (
    CHARS_PER_TOKEN,
    LanguageModel,
    ModelEndpoint,
    ModelFailed,
    bounded,
    summary,
)
from service.extraction.model_schema import InvalidSchema, check_schema
from tests.llm_standin import API_KEY, SUMMARY, ModelStandin, Reply

PRODUCT = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
    "required": ["name", "price"],
}
PAGE = "# Blue kettle\n\nPrice: 24.90 EUR\n"


@pytest.fixture
def standin() -> Iterator[ModelStandin]:
    model = ModelStandin().start()
    yield model
    model.stop()


def endpoint(standin: ModelStandin, **bounds: Any) -> ModelEndpoint:
    return ModelEndpoint(standin.base_url, "stand-in-model", API_KEY, **bounds)


def run(coro: Any) -> Any:
    """On a loop of its own, in a thread: the test session's reactor owns this thread's loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(coro, 20)).result()


async def extract(end: ModelEndpoint, page: str = PAGE, schema: Any = PRODUCT) -> Any:
    model = LanguageModel(end)
    try:
        return await model.json(page, "The product", schema)
    finally:
        await model.close()


def test_a_valid_answer_is_the_json_with_its_tokens(standin: ModelStandin) -> None:
    standin.script.append(Reply(json.dumps({"name": "Blue kettle", "price": 24.9})))
    answer = run(extract(endpoint(standin)))
    assert answer.value == {"name": "Blue kettle", "price": 24.9}
    (call,) = standin.calls
    assert answer.usage.prompt_tokens == len(call.text) // 4
    assert answer.usage.completion_tokens > 0
    assert call.authorization == f"Bearer {API_KEY}"
    assert call.body["model"] == "stand-in-model"
    assert call.body["response_format"]["type"] == "json_schema"
    assert call.body["response_format"]["json_schema"]["schema"] == PRODUCT
    assert "Blue kettle" in call.text and "The product" in call.text


def test_invalid_json_is_asked_again_once(standin: ModelStandin) -> None:
    standin.script.extend([Reply("{not json"), Reply('{"name": "Kettle", "price": 3}')])
    answer = run(extract(endpoint(standin)))
    assert answer.value == {"name": "Kettle", "price": 3}
    assert len(standin.calls) == 2
    assert "not JSON" in standin.calls[1].text
    first, second = standin.calls
    assert answer.usage.prompt_tokens == len(first.text) // 4 + len(second.text) // 4


def test_a_schema_violation_twice_fails_with_its_code(standin: ModelStandin) -> None:
    standin.script.extend([Reply('{"name": "Kettle"}'), Reply('{"name": 3, "price": 1}')])
    with pytest.raises(ModelFailed) as failed:
        run(extract(endpoint(standin)))
    assert failed.value.code == "llm_invalid_answer"
    assert "schema" in str(failed.value) and "name" in str(failed.value)
    assert len(standin.calls) == 2
    assert "'price' is a required property" in standin.calls[1].text
    assert failed.value.usage.completion_tokens > 0


def test_a_slow_model_times_out(standin: ModelStandin) -> None:
    standin.script.append(Reply('{"name": "x", "price": 1}', delay=3))
    with pytest.raises(ModelFailed) as failed:
        run(extract(endpoint(standin, timeout_seconds=0.5)))
    assert failed.value.code == "llm_timeout"
    assert "0.5 s" in str(failed.value)
    assert len(standin.calls) == 1  # the library's own retries are off


def test_a_429_is_unavailable_and_not_retried(standin: ModelStandin) -> None:
    standin.script.append(Reply(status=429))
    with pytest.raises(ModelFailed) as failed:
        run(extract(endpoint(standin)))
    assert failed.value.code == "llm_unavailable"
    assert "429" in str(failed.value)
    assert len(standin.calls) == 1


def test_a_very_long_page_is_cut_to_the_token_bound(standin: ModelStandin) -> None:
    page = "word " * 200_000  # a million characters
    run(extract(endpoint(standin, max_input_tokens=1000), page=page))
    (call,) = standin.calls
    sent = call.body["messages"][1]["content"]
    assert len(sent) < 1000 * CHARS_PER_TOKEN + 1000  # the page, plus the prompt and schema
    assert "the rest was cut" in sent
    assert len(bounded(page, 1000)) == 1000 * CHARS_PER_TOKEN


def test_a_summary_is_text(standin: ModelStandin) -> None:
    async def summarize() -> Any:
        model = LanguageModel(endpoint(standin))
        try:
            return await summary(model, PAGE)
        finally:
            await model.close()

    answer = run(summarize())
    assert answer.value == SUMMARY
    assert "response_format" not in standin.calls[0].body


def test_calls_are_bounded_in_concurrency(standin: ModelStandin) -> None:
    for _ in range(4):
        standin.script.append(Reply('{"name": "x", "price": 1}', delay=0.4))

    async def four() -> float:
        model = LanguageModel(endpoint(standin, concurrency=2))
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            await asyncio.gather(*(model.json(f"page {i}", None, PRODUCT) for i in range(4)))
        finally:
            await model.close()
        return loop.time() - started

    assert run(four()) >= 0.8  # two at a time: two rounds of 0.4 s
    texts = [call.text for call in standin.calls]
    for i in range(4):  # each call carries its own page, and no other
        (mine,) = [t for t in texts if f"page {i}" in t]
        assert all(f"page {j}" not in mine for j in range(4) if j != i)


def test_the_key_is_never_logged(standin: ModelStandin, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    standin.script.extend([Reply("{bad"), Reply(status=500)])
    with pytest.raises(ModelFailed):
        run(extract(endpoint(standin)))
    assert standin.calls  # the key went where it belongs
    assert API_KEY not in caplog.text
    assert API_KEY not in repr(endpoint(standin))


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"type": "objekt"}, "type"),
        ({"type": "object", "properties": {"a": {"type": 3}}}, "properties.a.type"),
        ([], ""),
    ],
)
def test_a_bad_schema_is_refused_with_its_path(schema: Any, path: str) -> None:
    with pytest.raises(InvalidSchema) as refused:
        check_schema(schema)
    assert refused.value.path == path


def test_a_good_schema_passes() -> None:
    check_schema(PRODUCT)
