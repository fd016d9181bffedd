"""The GraphiQL page: served for browsers, nothing inline, every asset local, a strict policy."""

from __future__ import annotations

import re

import httpx

from graphql_api.graphiql.page import CONTENT_SECURITY_POLICY

HTML = {"Accept": "text/html"}


def directives(policy: str) -> dict[str, str]:
    return {part.split(" ", 1)[0]: part.split(" ", 1)[1] for part in (p.strip() for p in policy.split(";"))}


def test_page__browser_accept__served_with_strict_policy(http: httpx.Client) -> None:
    response = http.get("/graphql", headers=HTML)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    policy = directives(CONTENT_SECURITY_POLICY)
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self'"
    assert response.headers["cache-control"] == "no-store"


def test_page__markup__no_inline_script_or_style(http: httpx.Client) -> None:
    page = http.get("/graphql", headers=HTML).text
    assert re.findall(r"<script(?![^>]*\bsrc=)", page) == []
    assert "<style" not in page
    assert " style=" not in page
    assert re.search(r"<[^>]*\son[a-z]+=", page) is None, "inline event handler"


def test_page__assets__all_local_and_served(http: httpx.Client) -> None:
    page = http.get("/graphql", headers=HTML).text
    urls = re.findall(r'<(?:script src|link rel="stylesheet" href)="([^"]+)"', page)
    assert len(urls) == 6
    for url in urls:
        assert url.startswith("/graphiql/assets/"), url
        response = http.get(url)
        assert response.status_code == 200, url
        kind = "text/javascript" if url.endswith(".js") else "text/css"
        assert response.headers["content-type"].startswith(kind), url
        assert response.headers["x-content-type-options"] == "nosniff"


def test_page__outside_development__no_sign_in_control(http: httpx.Client) -> None:
    assert "data-sign-in" not in http.get("/graphql", headers=HTML).text


def test_page__development__sign_in_control(development: httpx.Client) -> None:
    assert 'data-sign-in="/dev/tokens"' in development.get("/graphql", headers=HTML).text


def test_page__json_accept__graphql_not_page(http: httpx.Client) -> None:
    response = http.get("/graphql", params={"query": "{ __typename }"}, headers={"Accept": "application/json"})
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["data"] == {"__typename": "Query"}
