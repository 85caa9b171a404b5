"""JSON and summaries from the language model the operator chose: an OpenAI-compatible
chat-completions endpoint (a local vLLM or Ollama, or a hosted one), with the `openai` library.

Switched on by ``SCRAPESPY_LLM_BASE_URL`` (with ``SCRAPESPY_LLM_MODEL`` and
``SCRAPESPY_LLM_API_KEY``); without it, nothing here is built and the request fields that need a
model are refused (service.core.schemas).

A call is ``AsyncOpenAI``'s coroutine on the reactor's own asyncio loop (the service runs
Twisted's asyncio reactor): waiting on the model never blocks the reactor thread, and nothing
runs on another thread. At most ``concurrency`` calls are in flight (a semaphore; the others
wait their turn) and each is bounded in time (``timeout_seconds``, the library's own timeout,
with its retries off: a scrape has a deadline of its own).

The input is the page's main content as markdown, at most ``max_input_tokens``: a token is
counted as :data:`CHARS_PER_TOKEN` characters (OpenAI's rule of thumb for English text; a
tokenizer such as tiktoken downloads its tables at run time, which a self-hosted service cannot
rely on), so the markdown is cut at ``CHARS_PER_TOKEN * max_input_tokens`` characters. Each call
carries one page and nothing else: there is no conversation kept between calls, so one
account's page never reaches another account's request.

An answer that is not JSON, or does not validate against the caller's JSON Schema
(``jsonschema``, the schema's own draft), is asked for once more with the reason; a second bad
answer fails with :class:`ModelFailed` (``llm_invalid_answer``). The operator's key goes to the
endpoint in the ``Authorization`` header only: it is never logged nor part of a message here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from service.extraction.model_schema import CHARS_PER_TOKEN, most_tokens, violation

MARKER = "\n\n[the page is longer; the rest was cut]"

JSON_INSTRUCTIONS = (
    "You extract data from one web page, given as markdown. Answer with one JSON value that "
    "validates against the JSON Schema given, and nothing else. Use only what the page says."
)
SUMMARY_INSTRUCTIONS = (
    "You summarize one web page, given as markdown, in a few sentences of plain text. Use only "
    "what the page says."
)


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """The operator's endpoint and the bounds on its use (SCRAPESPY_LLM_* settings)."""

    base_url: str
    model: str
    api_key: str = field(repr=False)
    timeout_seconds: float = 30.0
    concurrency: int = 4
    max_input_tokens: int = 8000
    max_output_tokens: int = 1000

    def __repr__(self) -> str:  # the key stays out of any log line that shows the endpoint
        return f"ModelEndpoint({self.base_url!r}, model={self.model!r})"


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a page's extraction used, over all its attempts."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Answer:
    value: Any  # the JSON value (json), or the text (summary)
    usage: Usage


class ModelFailed(Exception):
    """The model gave no usable answer; ``code`` is the scrape's error_code."""

    def __init__(self, code: str, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.usage = usage or Usage()


def bounded(markdown: str, max_tokens: int) -> str:
    """The page as sent: at most ``max_tokens`` tokens, counted as :data:`CHARS_PER_TOKEN`
    characters each."""
    limit = max_tokens * CHARS_PER_TOKEN
    if len(markdown) <= limit:
        return markdown
    return markdown[: max(0, limit - len(MARKER))] + MARKER


class LanguageModel:
    """The operator's model, shared by every scrape of the process."""

    def __init__(self, endpoint: ModelEndpoint) -> None:
        # imported here: the library takes about half a second to import, which a deployment
        # without a model (and every start of the service) would pay for nothing
        import openai

        self._openai: ModuleType = openai
        self.endpoint = endpoint
        self._client = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key or "none",  # a local endpoint may want no key
            timeout=endpoint.timeout_seconds,
            max_retries=0,
        )
        self._slots = asyncio.Semaphore(endpoint.concurrency)

    def most_tokens(self) -> int:
        """The most tokens one extraction may use (both attempts), for its hold."""
        return most_tokens(self.endpoint.max_input_tokens, self.endpoint.max_output_tokens)

    async def json(
        self,
        markdown: str,
        prompt: str | None,
        schema: Mapping[str, Any],
        within: float | None = None,
    ) -> Answer:
        """A JSON value made from ``markdown`` that validates against ``schema``; retried once.
        ``within``: the seconds the scrape has left, when fewer than the endpoint's timeout."""
        messages: list[dict[str, str]] = [
            {"role": "system", "content": JSON_INSTRUCTIONS},
            {
                "role": "user",
                "content": f"{prompt or 'Extract the data the schema describes.'}\n\n"
                f"JSON Schema:\n{json.dumps(schema)}\n\n"
                f"Page:\n{bounded(markdown, self.endpoint.max_input_tokens)}",
            },
        ]
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": "extraction", "schema": dict(schema), "strict": False},
        }
        used = Usage()
        why = ""
        for _attempt in range(2):
            text, usage = await self._complete(messages, used, within, response_format)
            used += usage
            try:
                value = json.loads(text)
            except ValueError:
                why = "the answer was not JSON"
            else:
                found = violation(value, schema)
                if found is None:
                    return Answer(value, used)
                why = f"the answer does not match the schema {found}"
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": f"{why}. Answer again with JSON only."},
            ]
        raise ModelFailed(
            "llm_invalid_answer", f"the language model gave no valid answer twice: {why}", used
        )

    async def text(self, instructions: str, markdown: str, within: float | None = None) -> Answer:
        """The model's text answer to ``instructions`` about ``markdown`` (a format's producer
        asks it, service.core.formats)."""
        messages = [
            {"role": "system", "content": instructions},
            {"role": "user", "content": bounded(markdown, self.endpoint.max_input_tokens)},
        ]
        text, usage = await self._complete(messages, Usage(), within)
        if not text.strip():
            raise ModelFailed("llm_invalid_answer", "the language model answered nothing", usage)
        return Answer(text.strip(), usage)

    async def _complete(
        self,
        messages: list[dict[str, str]],
        used: Usage,
        within: float | None,
        response_format: dict[str, Any] | None = None,
    ) -> tuple[str, Usage]:
        """One call, in a slot and in time; the endpoint's failures as :class:`ModelFailed`."""
        timeout = self.endpoint.timeout_seconds
        if within is not None:
            timeout = max(0.1, min(timeout, within))
        extra: dict[str, Any] = {"timeout": timeout}
        if response_format is not None:
            extra["response_format"] = response_format
        try:
            async with self._slots:
                completion = await self._client.chat.completions.create(
                    model=self.endpoint.model,
                    messages=messages,  # type: ignore[arg-type]
                    max_tokens=self.endpoint.max_output_tokens,
                    temperature=0,
                    **extra,
                )
        except self._openai.APITimeoutError:
            raise ModelFailed(
                "llm_timeout",
                f"the language model did not answer within {timeout:g} s",
                used,
            ) from None
        except self._openai.RateLimitError:
            raise ModelFailed(
                "llm_unavailable", "the language model is busy (HTTP 429); retry later", used
            ) from None
        except self._openai.APIStatusError as exc:
            raise ModelFailed(
                "llm_unavailable", f"the language model answered HTTP {exc.status_code}", used
            ) from None
        except self._openai.APIConnectionError:
            raise ModelFailed(
                "llm_unavailable", "could not connect to the language model", used
            ) from None
        usage = completion.usage
        counted = (
            Usage(usage.prompt_tokens, usage.completion_tokens) if usage is not None else Usage()
        )
        choice = completion.choices[0] if completion.choices else None
        text = choice.message.content if choice is not None else None
        return text or "", counted

    async def close(self) -> None:
        await self._client.close()


async def summary(model: LanguageModel, markdown: str, within: float | None = None) -> Answer:
    """The ``summary`` format's producer: a few sentences about ``markdown``."""
    return await model.text(SUMMARY_INSTRUCTIONS, markdown, within)
