"""Fixtures of the agent_memory tests: alice, whose memories they are, and her API client."""

import pytest

from tests.conftest import api_client_for
from tests.factories import UserFactory


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


@pytest.fixture
def client(alice):
    return api_client_for(alice)
