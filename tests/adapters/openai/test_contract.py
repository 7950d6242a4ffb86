"""Collects the shared adapter contract suite (``tests/adapters/contract.py``) once, for both twins.

The suite is parametrized over ``llm-deepseek`` and ``llm-openai`` itself, so importing
its tests here runs every case exactly once.
"""

from tests.adapters.contract import (
    test_an_abort_mid_stream_ends_the_stream_and_releases_the_connection,
    test_closing_the_stream_early_releases_the_connection,
    test_every_adapter_obeys_the_chunk_protocol,
    test_the_twins_produce_equal_assembled_messages,
    test_the_twins_send_the_same_request_for_equivalent_settings,
)

__all__ = [
    "test_an_abort_mid_stream_ends_the_stream_and_releases_the_connection",
    "test_closing_the_stream_early_releases_the_connection",
    "test_every_adapter_obeys_the_chunk_protocol",
    "test_the_twins_produce_equal_assembled_messages",
    "test_the_twins_send_the_same_request_for_equivalent_settings",
]
