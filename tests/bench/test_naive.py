"""The naive variant (bench/naive.py): the product's schema with a call per read, no DataLoader.

The bench compares the product against it, so it must give the product's answers to the
bench's query shapes, by a call for every read.
"""

from __future__ import annotations

import pytest

import graphql_api.request.session
from bench.naive import NaiveLoaders
from bench.queries import Q1, Q2, Q3
from datastore.dev import demo as demo_data
from graphql_api.execution import ids
from tests.graphql_api.fixtures import Api, Demo


def nodes(demo: Demo) -> str:
    """Q4's shape: aliased ``node`` fields, here of Acme people, and their departments by id
    (seven of each: the default limits admit 15 aliases)."""
    people = [person for email, person in demo.people.items() if email.endswith("@acme.co")][:7]
    fields = [
        f'e{i}: node(id: "{ids.encode("Employee", p.emp_id)}") {{ ... on Employee {{ email }} }}'
        for i, p in enumerate(people)
    ]
    fields += [
        f'd{i}: department(id: "{ids.encode("Department", p.department_id)}") {{ name manager {{ email }} }}'
        for i, p in enumerate(people)
        if p.department_id
    ]
    return "{ " + " ".join(fields) + " me { email } }"


@pytest.mark.parametrize("shape", ["Q1", "Q2", "Q3", "Q4"])
def test_naive_loaders__bench_shapes__the_products_data_by_more_calls(
    api: Api, demo: Demo, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    query = {"Q1": Q1, "Q2": Q2, "Q3": Q3, "Q4": nodes(demo)}[shape]
    caller = api.as_(demo.person("dave@acme.co" if shape == "Q3" else demo_data.ACME_ADMIN))
    product = caller.query(query)
    assert "errors" not in product, product["errors"]
    monkeypatch.setattr(graphql_api.request.session, "Loaders", NaiveLoaders)  # as bench.serve --naive installs it
    naive = caller.query(query)
    assert "errors" not in naive, naive["errors"]
    assert naive["data"] == product["data"]
    calls = [sum(body["extensions"]["cost"]["requests"].values()) for body in (product, naive)]
    assert calls[1] > calls[0]
