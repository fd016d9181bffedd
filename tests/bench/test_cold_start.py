"""The cold-start lane (bench/cold_start.py): ``server.py run`` on an existing table and the bare
Starlette floor, each spawned and timed to its first answer; figures only, never timed here."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

from bench import cold_start
from bench.serving import API, server_env
from deploy.package import PACKAGES
from graphql_api.auth.tokens import issue_token
from tests.bytecode import compiled_from_source, loaded_from_bytecode
from tests.graphql_api.fixtures import load_demo
from tests.paths import ROOT

if TYPE_CHECKING:
    from datastore.aws.client import AsyncDynamo


def test_measure__a_tiny_run__the_three_figures_from_real_first_answers(
    dynamo: AsyncDynamo, streamed_table_name: str, dynamodb_endpoint: str
) -> None:
    # A served table turns its stream on: the session's streamed table, with the demo's people.
    dave = load_demo(dynamo, streamed_table_name).person("dave@acme.co")
    token = issue_token(API, subject=dave.emp_id, org_id=dave.org_id, role=dave.role.value)
    env = server_env(dynamodb_endpoint, streamed_table_name)

    product = cold_start.product_run(env, token, cold_start.free_port())
    # Q3 answered for its caller: the server served the existing table's data.
    assert product.body["data"]["me"]["firstName"] == dave.first_name
    assert product.seconds > 0 and product.rss_mb > 0 and product.cpu_ms > 0

    figures = cold_start.measure(env, token, runs=1)
    assert set(figures) == {
        "cold_start_ms",
        "cold_start_floor_ms",
        "rss_first_answer_mb",
        "rss_first_answer_floor_mb",
        "cold_start_cpu_ms",
        "cold_start_floor_cpu_ms",
        "cold_start_stack_ms",
        "cold_start_stack_cpu_ms",
    }
    assert all(value > 0 for value in figures.values())
    # The targets' row (bench/targets.py) carries the product's against the floor's.
    row = cold_start.row(figures)
    assert row["product"]["cold_start_ms"] == figures["cold_start_ms"]
    assert row["floor"]["cold_start_ms"] == figures["cold_start_floor_ms"]

    # Both were timed as deployed: the lane compiled their bytecode, so with none written by the
    # processes themselves, the server's imports and the floor's load no module of ours from source.
    env_without_writes = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for args, entry in (
        (["server.py", "--help"], "graphql_api/app.py"),
        (["-c", "import bench.bare_app"], "bench/bare_app.py"),
        (["-c", "import bench.stack_app"], "bench/stack_app.py"),
    ):
        started = subprocess.run(
            [sys.executable, "-v", *args], cwd=ROOT, env=env_without_writes, capture_output=True, text=True, check=False
        )
        assert started.returncode == 0, started.stderr[-3000:]
        for tree in (*PACKAGES, "bench"):
            assert compiled_from_source(started.stderr, ROOT / tree) == []
        assert str(ROOT / entry) in loaded_from_bytecode(started.stderr, ROOT)
