"""Fixtures of the agent_memory tests: alice, whose memories they are, and her API client."""

import pytest
from django.test import Client

from tests.conftest import api_client_for
from tests.factories import UserFactory


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


@pytest.fixture
def client(alice):
    return api_client_for(alice)


@pytest.fixture
def web(alice):
    """The dashboard in alice's browser session."""
    client = Client()
    client.force_login(alice)
    return client
