"""Schemathesis's positive mode against the service's ``/openapi.json``: what runs and what is
checked is tests/api_fuzzing.py's."""

from __future__ import annotations

import pytest

from tests.api_fuzzing import (  # noqa: F401 - the module's fixtures
    api_key,
    fuzzed_service,
    local_targets,
    model,
    openapi_document,
    schema_fixture,
    schema_test,
    search_backend,
)

pytestmark = pytest.mark.long(minutes=6)

api_schema = schema_fixture("positive")
test_every_operation_holds_to_its_schema = schema_test()
