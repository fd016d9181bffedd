"""The bench's query texts, Q1-Q7, one place for the bench, the profiler and the cost tests.

Q6 is the costliest read the default limits admit (cost, aliases, depth, tokens, body size):
the whole directory read through fourteen distinct 100-employee pages, every field and every
cursor, 1,400 objects. Its pages continue each other with real ``after`` cursors, so every
alias is a Query of its own (aliases of one page would be read once). Q7 is the whole tree,
20 departments x 50 employees x 3 applications with each application's job posting: cost
~11.8k, over the default 5,000, so it runs with the bench server's raised MAX_QUERY_COST.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.dataset import Dataset
from graphql_api.execution import ids

Q1 = (
    "{ organization { departments(first: 20) { edges { node { name employees(first: 50) { edges { node { "
    "email firstName lastName role status hiredAt } } } } } } } }"
)
Q2 = (
    "{ organization { jobPostings(status: OPEN, first: 20) { edges { node { title applications(first: 50) { "
    "edges { node { status employee { email department { name } } } } } } } } } }"
)
Q3 = (
    "{ me { firstName department { name manager { email } } applications(first: 10) { edges { node { status "
    "jobPosting { title } } } } } }"
)
Q5 = "mutation($i: MoveEmployeeInput!) { moveEmployee(input: $i) { employee { id } } }"
Q7 = (
    "{ organization { departments(first: 20) { edges { node { name employees(first: 50) { edges { node { "
    "email firstName lastName applications(first: 3) { edges { node { status submittedAt "
    "jobPosting { title status } } } } } } } } } } } }"
)

# Q6's pages: ten ascending (the whole directory) and four descending, 100 employees each.
Q6_PAGES_ASC, Q6_PAGES_DESC, Q6_PAGE = 10, 4, 100
EVERY_EMPLOYEE_FIELD = "id email firstName lastName role status hiredAt terminatedAt version"
CURSORS = (
    "query($after: String, $order: SortOrder) { organization { "
    "employees(first: 100, after: $after, order: $order) { pageInfo { endCursor } } } }"
)


def q4(data: Dataset) -> str:
    return (
        "{ "
        + " ".join(
            f'n{i}: node(id: "{ids.encode("Employee", e.emp_id)}") {{ ... on Employee {{ email }} }}'
            for i, e in enumerate(data.employees[:100])
        )
        + " }"
    )


def q5_moves(data: Dataset) -> list[dict[str, Any]]:
    """Q5's requests: employees 100-999 each moved to another department, three rounds (2,700
    moves, none to the department the employee is in)."""
    return [
        {
            "query": Q5,
            "variables": {
                "i": {
                    "id": ids.encode("Employee", e.emp_id),
                    "departmentId": ids.encode("Department", data.departments[(i // 50 + 1 + r) % 20].dept_id),
                }
            },
        }
        for r in range(1, 4)
        for i, e in enumerate(data.employees[100:1000], start=100)
    ]


def q6(afters: list[tuple[str, str | None]]) -> str:
    """The aliased pages, one per (order, after cursor or None for the first page)."""
    pages = " ".join(
        f"p{n}: employees(first: {Q6_PAGE}{_after(after)}, order: {order}) "
        f"{{ edges {{ cursor node {{ {EVERY_EMPLOYEE_FIELD} }} }} }}"
        for n, (order, after) in enumerate(afters)
    )
    return f"{{ organization {{ {pages} }} }}"


def _after(cursor: str | None) -> str:
    return "" if cursor is None else f', after: "{cursor}"'


def q6_cursors(post: Callable[[dict[str, Any]], dict[str, Any]]) -> list[tuple[str, str | None]]:
    """Q6's ``after`` cursors, read through the API the way a client pages: ``post`` sends a body."""
    afters: list[tuple[str, str | None]] = []
    for order, pages in (("ASC", Q6_PAGES_ASC), ("DESC", Q6_PAGES_DESC)):
        after: str | None = None
        for _ in range(pages):
            afters.append((order, after))
            answer = post({"query": CURSORS, "variables": {"after": after, "order": order}})
            after = answer["data"]["organization"]["employees"]["pageInfo"]["endCursor"]
    return afters
