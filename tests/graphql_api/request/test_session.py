"""A request's session, once the request is over (graphql_api/request/session.py)."""

from __future__ import annotations

import gc
import time

from datastore.entities import Employee
from tests.graphql_api.fixtures import Api, Demo

DIRECTORY = "{ organization { departments { edges { node { name employees { edges { node { email } } } } } } } }"


def employees_alive() -> int:
    return sum(1 for obj in gc.get_objects() if type(obj) is Employee)


def test_request_over__what_it_loaded_is_freed_without_the_cyclic_collector(api: Api, demo: Demo) -> None:
    """The loaders and the session hold each other (the loaders run their calls through the
    session); left as a cycle, every entity a request read waited for a full collection,
    which walked them all while every request in flight stalled (Q1: 1,000 employees)."""
    gc.collect()
    gc.disable()  # what is freed from here on is freed by reference counting alone
    try:
        before = employees_alive()
        body = api.as_(demo.person("alice@acme.co")).query(DIRECTORY)
        time.sleep(0.3)  # the server's thread ends the request after its last byte is sent
        after = employees_alive()
    finally:
        gc.enable()
    assert "errors" not in body, body["errors"]
    listed = sum(len(d["node"]["employees"]["edges"]) for d in body["data"]["organization"]["departments"]["edges"])
    assert listed >= 5
    assert after - before <= 1  # the caller, whom the active check may keep
