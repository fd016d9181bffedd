"""``server.py run`` as an operator runs it: a real process with its embedded DynamoDB Local.

Each test starts the server on its own data directory and ports, and checks what is left
behind when it stops: no Java process, a released data-directory lock.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from datastore.dev.local import free_port
from tests import otlp

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_SECONDS = 90.0


def engine_pids(data_dir: Path) -> list[int]:
    """Processes whose command line names ``data_dir``: the engine serving it, if any."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # it exited while we looked
        if str(data_dir).encode() in cmdline and b"-jar" in cmdline:
            found.append(int(entry.name))
    return found


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    data_dir: Path
    env: dict[str, str]
    output: list[str]

    def stop(self, sig: signal.Signals) -> int:
        """Sends ``sig``, waits for the exit, and keeps the rest of the output."""
        self.process.send_signal(sig)
        code = self.process.wait(timeout=30)
        self.close()
        return code

    def close(self) -> None:
        if self.process.stdout is not None and not self.process.stdout.closed:
            self.output.append(self.process.stdout.read())
            self.process.stdout.close()


def start_server(data_dir: Path, *, workers: int = 1, extra_env: dict[str, str] | None = None) -> Server:
    port = free_port()
    env = {
        **os.environ,
        **(extra_env or {}),
        "PORT": str(port),
        "DYNAMODB_LOCAL_PORT": str(free_port()),
        "DYNAMODB_LOCAL_DATA": str(data_dir),
        "WORKERS": str(workers),
        "SHUTDOWN_GRACE_SECONDS": "5",
    }
    env.pop("DYNAMODB_ENDPOINT", None)
    process = subprocess.Popen(
        [sys.executable, "server.py"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    server = Server(process, f"http://127.0.0.1:{port}", data_dir, env, [])
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    assert process.stdout is not None
    # A server that never says it serves is killed at the deadline, which ends the read below
    # (a blocked readline would otherwise wait for ever).
    watchdog = threading.Timer(START_TIMEOUT_SECONDS, process.kill)
    watchdog.start()
    try:
        while True:
            line = process.stdout.readline()
            if not line:
                server.close()
                code = process.wait()
                raise AssertionError(f"the server exited at start with {code}: {''.join(server.output)}")
            server.output.append(line)
            # Plain, or a JSON log line's message under LOG_FORMAT=json.
            if line.startswith("GraphQL on") or '"GraphQL on http' in line:
                break
    finally:
        watchdog.cancel()
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    process.wait()
    server.close()
    raise AssertionError(f"the server did not answer: {''.join(server.output)}")


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "dynamodb"
    for pid in engine_pids(tmp_path / "dynamodb"):  # never leave an engine behind a failed test
        os.kill(pid, signal.SIGKILL)


def token(server: Server, email: str) -> str:
    """A token from ``server.py token``, which reuses the running engine."""
    result = subprocess.run(
        [sys.executable, "server.py", "token", "--email", email],
        cwd=ROOT,
        env=server.env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_run__signal__stops_the_engine_and_releases_the_data(data_dir: Path, sig: signal.Signals) -> None:
    server = start_server(data_dir)
    assert len(engine_pids(data_dir)) == 1

    assert server.stop(sig) == 0

    assert engine_pids(data_dir) == []
    assert not (data_dir / "endpoint").exists()
    # The lock went with the process: the same data starts again at once.
    again = start_server(data_dir)
    assert again.stop(signal.SIGTERM) == 0


def test_run__second_server_on_the_same_data__refused_in_one_line(data_dir: Path) -> None:
    first = start_server(data_dir)
    try:
        env = {**first.env, "PORT": str(free_port()), "DYNAMODB_LOCAL_PORT": str(free_port())}
        second = subprocess.run(
            [sys.executable, "server.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 2
        assert second.stdout == ""
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert f"pid {first.process.pid}" in lines[0]
        assert "already using" in lines[0]
        assert len(engine_pids(data_dir)) == 1  # the first engine, untouched
        assert httpx.get(f"{first.url}/healthz").status_code == 200
    finally:
        assert first.stop(signal.SIGTERM) == 0
    assert engine_pids(data_dir) == []


def test_run__server_killed__engine_dies_with_it(data_dir: Path) -> None:
    server = start_server(data_dir)

    server.process.kill()  # no cleanup runs: the kernel's parent-death signal stops the engine
    server.process.wait(timeout=10)
    server.close()

    deadline = time.monotonic() + 15
    while engine_pids(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert engine_pids(data_dir) == []


def zombie_or_running(pid: int) -> bool:
    """Whether ``pid`` is still in the process table: running, or exited and never reaped."""
    return Path(f"/proc/{pid}").exists()


def test_run__engine_killed__the_server_reaps_it_and_says_so(data_dir: Path) -> None:
    server = start_server(data_dir)
    try:
        [engine] = engine_pids(data_dir)
        os.kill(engine, signal.SIGKILL)  # the OOM killer's way

        deadline = time.monotonic() + 15
        while zombie_or_running(engine) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not zombie_or_running(engine)  # reaped by the server, not left a zombie child
        assert httpx.get(f"{server.url}/healthz").status_code == 200  # the server itself lives on
        deadline = time.monotonic() + 15
        while httpx.get(f"{server.url}/readyz").status_code != 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert httpx.get(f"{server.url}/readyz").status_code == 503
    finally:
        assert server.stop(signal.SIGTERM) == 0
    assert f"DynamoDB Local (pid {engine}) exited with status -9 while in use" in "".join(server.output)


EMPLOYEES_PAGE = """
query($after: String) {
  organization { employees(first: 2, after: $after) {
    edges { node { email } } pageInfo { hasNextPage endCursor }
  } }
}"""

CREATE_DEPARTMENT = """
mutation($input: CreateDepartmentInput!) {
  createDepartment(input: $input) { department { id name headcount } }
}"""


def post(url: str, token: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    # A new connection per request, so the kernel hands them to either worker.
    response = httpx.post(
        f"{url}/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body


def test_run__two_workers__pages_and_retries_consistent_across_workers(data_dir: Path) -> None:
    server = start_server(data_dir, workers=2)
    try:
        alice = token(server, "alice@acme.co")
        # Every page read on a fresh connection: cursors signed by one worker are read by the other.
        walks = []
        for _ in range(4):
            emails: list[str] = []
            after = None
            while True:
                page = post(server.url, alice, EMPLOYEES_PAGE, {"after": after})["data"]["organization"]["employees"]
                emails += [edge["node"]["email"] for edge in page["edges"]]
                if not page["pageInfo"]["hasNextPage"]:
                    break
                after = page["pageInfo"]["endCursor"]
            walks.append(emails)
        assert len(walks[0]) == len(set(walks[0])) > 2
        assert all(walk == walks[0] for walk in walks)

        # The idempotency record lives in DynamoDB: a retry answers the same on any worker.
        variables = {"input": {"name": f"Workers {time.time_ns()}", "idempotencyKey": f"w-{time.time_ns()}"}}
        answers = [post(server.url, alice, CREATE_DEPARTMENT, variables)["data"] for _ in range(6)]
        assert all(answer == answers[0] for answer in answers)

    finally:
        assert server.stop(signal.SIGTERM) == 0
    assert engine_pids(data_dir) == []
    log = "".join(server.output)
    workers = {line.rsplit("[", 1)[1].split("]")[0] for line in log.splitlines() if "Started server process" in line}
    assert len(workers) == 2, log


def graphql_requests_counted(metrics_url: str) -> float:
    """The request count /metrics reports for the /graphql route, summed over its label values."""
    text = httpx.get(metrics_url, timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "hr_request_duration_seconds_count" and sample.labels["route"] == "/graphql"
    )


def process_metrics(metrics_url: str) -> dict[str, dict[int, float]]:
    """The process_* samples /metrics serves, by name and then by the worker's pid."""
    found: dict[str, dict[int, float]] = {}
    for family in text_string_to_metric_families(httpx.get(metrics_url, timeout=10).text):
        for sample in family.samples:
            if sample.name.startswith("process_"):
                found.setdefault(sample.name, {})[int(sample.labels["pid"])] = sample.value
    return found


def parent_of(pid: int) -> int:
    """The parent's pid of a running process, from /proc/<pid>/stat (field 4, after the name)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def wait_for_pids(metrics_url: str, wanted: Callable[[set[int]], bool]) -> dict[str, dict[int, float]]:
    """/metrics' process samples once their pids satisfy ``wanted`` (each worker refreshes its own every 5 s).

    A replacement worker starts as a server does (a fresh interpreter, settings, the layout
    check), so it gets a server's start-up time; past it the test fails saying what it saw.
    """
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        found = process_metrics(metrics_url)
        pids = set(found.get("process_resident_memory_bytes", {}))
        if wanted(pids):
            return found
        assert time.monotonic() < deadline, f"the workers' process metrics named pids {sorted(pids)}"
        time.sleep(0.5)


def test_run__two_workers__metrics_count_each_request_once(data_dir: Path) -> None:
    metrics_port = free_port()
    # Ping is configured, so one organisation's requests are labelled with it (observability/labels.py).
    env = {"METRICS_PORT": str(metrics_port), "LOG_FORMAT": "json", "METRICS_OPERATIONS": "Ping"}
    server = start_server(data_dir, workers=2, extra_env=env)
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    requests = 40
    try:
        alice = token(server, "alice@acme.co")
        assert httpx.get(f"{server.url}/metrics").status_code == 404  # never on the API's port
        # Eight at a time, each on a new connection: both workers take some.
        with ThreadPoolExecutor(8) as pool:
            ping = functools.partial(post, server.url, alice, "query Ping { me { email } }", {})
            answers = list(pool.map(lambda _: ping(), range(requests)))
        assert all(answer["data"]["me"]["email"] == "alice@acme.co" for answer in answers)
        # A request is counted just after its response is sent: wait for the last one.
        deadline = time.monotonic() + 30
        while graphql_requests_counted(metrics_url) < requests and time.monotonic() < deadline:
            time.sleep(0.1)
        counted = graphql_requests_counted(metrics_url)
        text = httpx.get(metrics_url, timeout=10).text
        # Process metrics of every worker, by pid; a killed worker leaves them once uvicorn replaced it.
        alive = wait_for_pids(metrics_url, lambda pids: len(pids) == 2)
        parents = {pid: parent_of(pid) for pid in alive["process_resident_memory_bytes"]}
        killed = min(parents)
        os.kill(killed, signal.SIGKILL)
        replaced = wait_for_pids(metrics_url, lambda pids: len(pids) == 2 and killed not in pids)
        text_after_kill = httpx.get(metrics_url, timeout=10).text
    finally:
        assert server.stop(signal.SIGTERM) == 0

    assert counted == requests
    lines = [orjson.loads(line) for line in "".join(server.output).splitlines() if line.startswith("{")]
    workers = {line["pid"] for line in lines if line["logger"] == "hr.access"}
    assert parents == dict.fromkeys(workers, server.process.pid)  # the workers that served, the server's children
    assert f'hr_request_duration_seconds_count{{operation="Ping",route="/graphql"}} {float(requests)}' in text
    assert f'hr_requests_total{{operation="Ping",route="/graphql",status="200"}} {float(requests)}' in text
    assert "hr_requests_in_flight 0.0" in text
    access = [line for line in lines if line["logger"] == "hr.access" and line["path"] == "/graphql"]
    assert len(access) == requests  # one line per request, and uvicorn's access log is off
    assert not [line for line in lines if line["logger"] == "uvicorn.access"]
    assert len(workers) == 2  # both workers served, both counted
    assert set(alive["process_resident_memory_bytes"]) == workers
    for pid in workers:
        assert alive["process_resident_memory_bytes"][pid] > 20e6
        assert alive["process_cpu_seconds_total"][pid] > 0
        assert 0 < alive["process_open_fds"][pid] < alive["process_max_fds"][pid]
        assert abs(alive["process_start_time_seconds"][pid] - time.time()) < START_TIMEOUT_SECONDS + 120
    assert killed not in replaced["process_resident_memory_bytes"]
    assert len(replaced["process_resident_memory_bytes"]) == 2  # uvicorn's replacement worker
    assert f'hr_requests_total{{operation="Ping",route="/graphql",status="200"}} {float(requests)}' in (
        text_after_kill
    )  # a dead worker's counts stay


def test_run__metrics_port_is_the_api_port__refused_in_one_line(data_dir: Path) -> None:
    port = str(free_port())
    env = {**os.environ, "PORT": port, "METRICS_PORT": port, "DYNAMODB_LOCAL_DATA": str(data_dir)}

    result = subprocess.run(
        [sys.executable, "server.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 2
    assert result.stderr == "error: METRICS_PORT must differ from PORT: /metrics is never served on the API's port\n"
    assert engine_pids(data_dir) == []


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("WORKERS", "two", "WORKERS must be an integer, got 'two'"),
        ("HR_DEMO_DATA", "maybe", "HR_DEMO_DATA must be true or false, got 'maybe'"),
        ("DYNAMODB_POOL_SIZE", "0", "DYNAMODB_POOL_SIZE must be at least 1, got 0"),
    ],
)
def test_run__unusable_setting__refused_in_one_line_naming_it(
    data_dir: Path, name: str, value: str, message: str
) -> None:
    env = {**os.environ, "PORT": str(free_port()), "DYNAMODB_LOCAL_DATA": str(data_dir), name: value}

    result = subprocess.run(
        [sys.executable, "server.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 2
    assert result.stderr == f"error: {message}\n"
    assert engine_pids(data_dir) == []


def test_run__otel_endpoint__spans_for_request_operation_and_each_call_none_per_field(data_dir: Path) -> None:
    with otlp.receiver() as collector:
        server = start_server(data_dir, extra_env={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint})
        try:
            alice = token(server, "alice@acme.co")
            query = "query Me { me { email firstName department { name manager { email } } } }"
            body = post(server.url, alice, query, {})
        finally:
            assert server.stop(signal.SIGTERM) == 0  # the last batch is flushed at exit
        spans = list(collector.spans)

    assert set(collector.paths) == {"/v1/traces"}
    (request,) = [span for span in spans if span.name == "POST /graphql"]
    trace = [span for span in spans if span.trace_id == request.trace_id]
    (operation,) = [span for span in trace if span.parent_span_id == request.span_id]
    assert operation.name == "GraphQL Me"
    calls = [span for span in trace if span.parent_span_id == operation.span_id]
    assert len(calls) == body["extensions"]["cost"]["requestCount"] > 0
    assert {span.name for span in calls} <= {"DynamoDB GetItem", "DynamoDB BatchGetItem", "DynamoDB Query"}
    assert len(trace) == 2 + len(calls)  # nothing per field
    assert request.kind == request.SPAN_KIND_SERVER
    assert all(span.kind == span.SPAN_KIND_CLIENT for span in calls)
