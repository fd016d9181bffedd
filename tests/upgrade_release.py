"""``make upgrade-test``: a real checkout of the previous release upgraded in place, end to end.

    python -m tests.upgrade_release [COMMIT] [--keep]

1. ``git archive COMMIT`` (default PREVIOUS_RELEASE, below; OLDER_RELEASE is the release
   before layout versions) into a temporary directory, and its own virtualenv made by its
   own Makefile;
2. its ``make run`` on a fresh data directory: it loads its demo data, and this script writes
   more through its API (an organisation whose people use two email domains, before layout
   versions one whose admin uses a domain of another, departments, employees, jobs,
   applications and decisions; where the release has them, an API key), then reads back what
   each organisation holds, as that release answers it, and keeps a token it issued;
3. the previous release stopped the way a process manager stops it (SIGTERM to its server);
4. this checkout: ``server.py migrate`` beside an engine the previous release left running
   (refused, naming its pid); when the release wrote an earlier layout than this one's,
   ``server.py run`` before migrating (refused, naming the command and leaving the table
   as it was), ``server.py migrate``; then this release's server answering name search,
   ``orderBy: NAME``, ``applicationCounts``, ``emailDomains`` and ``createEmployee`` for every
   organisation as the previous release's data says they should, to the token and the API
   key the previous release issued; then ``migrate`` again (nothing to do).

Not part of ``make test``: it installs a second virtualenv and runs two releases (a few
minutes). It prints each step and check, and exits non-zero on the first check that fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from datastore.config import DatastoreSettings
from datastore.dev import engines
from datastore.dev.local import free_port
from datastore.upkeep import layout_version

ROOT = Path(__file__).resolve().parent.parent
# The release operators run now (layout 2), the default.
PREVIOUS_RELEASE = "8bac9fb"
# The release before layout versions: the last commit before 8c7f8f6 ("Organisations own
# their email domains"), so before email domains (8c7f8f6), application counters (e6a07db)
# and name entries (726dd65) alike: it exercises every step of `server.py migrate`.
OLDER_RELEASE = "d3877fb"
START_TIMEOUT_SECONDS = 180.0
ENGINE_EXIT_SECONDS = 20.0


class CheckFailed(Exception):
    pass


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def check(condition: bool, text: str) -> None:
    print(f"   {'ok  ' if condition else 'FAIL'} {text}", flush=True)
    if not condition:
        raise CheckFailed(text)


def shown(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    for line in (result.stdout + result.stderr).splitlines():
        if line.strip() and not line.startswith("migrating:"):  # not the progress bar's redraws
            print(f"   | {line}", flush=True)
    return result


@dataclass
class Release:
    """A checkout and how to run its ``server.py`` on the shared data directory."""

    name: str
    root: Path
    python: str
    env: dict[str, str]
    # The data layout it writes (datastore/upkeep/layout_version.py's CURRENT; 0 before there was one).
    layout: int = layout_version.CURRENT
    # Whether its API has createApiKey.
    api_keys: bool = True
    commit: str = "HEAD"

    def command(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.python, "server.py", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def token(self, *, email: str | None = None, platform: str | None = None) -> str:
        args = ["--email", email] if email is not None else ["--platform", platform or "operator"]
        result = self.command("token", *args)
        if result.returncode != 0:
            raise CheckFailed(f"{self.name}: server.py token {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout.strip()


@dataclass
class Api:
    url: str

    def status(self, token: str) -> int:
        """The HTTP status of a request carrying ``token`` (an access token or an API key)."""
        response = httpx.post(
            f"{self.url}/graphql",
            json={"query": "{ organization { name } }"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        return response.status_code

    def graphql(self, token: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = httpx.post(
            f"{self.url}/graphql",
            json={"query": query, "variables": variables or {}},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        body: dict[str, Any] = response.json()
        if body.get("errors"):
            raise CheckFailed(f"{query.split('{')[0].strip() or 'query'}: {body['errors']}")
        data: dict[str, Any] = body["data"]
        return data

    def errors(self, token: str, query: str, variables: dict[str, Any]) -> list[dict[str, Any]]:
        response = httpx.post(
            f"{self.url}/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        found: list[dict[str, Any]] = response.json().get("errors") or []
        return found


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (from /proc)."""
    found: list[int] = []
    frontier = [root]
    all_pids = [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid in all_pids if _parent_of(pid) == parent]
        found += children
        frontier += children
    return found


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


@contextmanager
def running(release: Release, *launch: str) -> Iterator[Api]:
    """The release's server started with ``launch`` (``make run`` or ``server.py``), until it
    answers /healthz; stopped with SIGTERM to its server process if still running after."""
    process = subprocess.Popen(
        list(launch),
        cwd=release.root,
        env=release.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    api = Api(f"http://127.0.0.1:{release.env['PORT']}")
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            line = process.stdout.readline()
            if not line:
                raise CheckFailed(f"{release.name} exited at start (status {process.wait()})")
            print(f"   | {line.rstrip()}", flush=True)
            if line.startswith("GraphQL on"):
                break
            if time.monotonic() > deadline:
                raise CheckFailed(f"{release.name} did not start within {START_TIMEOUT_SECONDS:.0f}s")
        while True:
            try:
                if httpx.get(f"{api.url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise CheckFailed(f"{release.name} did not answer /healthz")
            time.sleep(0.2)
        yield api
    finally:
        for pid in [process.pid, *descendants(process.pid)]:
            if any(part.endswith("server.py") for part in cmdline(pid)):
                os.kill(pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


# --- what the previous release holds, read through its own API ---------------------------------

EMPLOYEES = """{ organization { name employees(first: 100) {
  edges { node { email firstName lastName } } } } }"""
JOBS = """{ organization { jobPostings(first: 20) { edges { node { title
  applications(first: 50) { edges { node { status } } } } } } } }"""


@dataclass
class Expected:
    """One organisation as the previous release answered for it: what this release must answer."""

    admin: str
    name: str = ""
    # Issued by the previous release: an access token of the admin, and (where it has them) an API key.
    token: str = ""
    api_key: str | None = None
    people: list[tuple[str, str, str]] = field(default_factory=list)  # email, first, last
    applications: dict[str, Counter[str]] = field(default_factory=dict)  # job title -> statuses
    domains: list[str] = field(default_factory=list)


CREATE_API_KEY = """mutation { createApiKey(input: {name: "HRIS sync", role: EMPLOYEE}) { secret } }"""


def read_expected(old: Release, api: Api, expected: Expected) -> None:
    token = expected.token = old.token(email=expected.admin)
    if old.api_keys:
        expected.api_key = api.graphql(token, CREATE_API_KEY)["createApiKey"]["secret"]
    organization = api.graphql(token, EMPLOYEES)["organization"]
    expected.name = organization["name"]
    expected.people = [
        (edge["node"]["email"], edge["node"]["firstName"], edge["node"]["lastName"])
        for edge in organization["employees"]["edges"]
    ]
    for edge in api.graphql(token, JOBS)["organization"]["jobPostings"]["edges"]:
        statuses = Counter(app["node"]["status"] for app in edge["node"]["applications"]["edges"])
        expected.applications[edge["node"]["title"]] = statuses


CREATE_ORGANIZATION = """mutation($input: CreateOrganizationInput!) {
  createOrganization(input: $input) { organization { id } adminId } }"""
CREATE_DEPARTMENT = """mutation($name: String!) {
  createDepartment(input: {name: $name}) { department { id } } }"""
CREATE_EMPLOYEE = """mutation($input: CreateEmployeeInput!) {
  createEmployee(input: $input) { employee { id email } } }"""
CREATE_JOB = """mutation($departmentId: ID!, $title: String!) {
  createJobPosting(input: {departmentId: $departmentId, title: $title}) { jobPosting { id } } }"""
PUBLISH_JOB = """mutation($id: ID!) { publishJobPosting(input: {id: $id}) { jobPosting { id } } }"""
APPLY = """mutation($job: ID!) { applyToJob(input: {jobPostingId: $job}) { application { id } } }"""
SET_STATUS = """mutation($id: ID!, $status: ApplicationStatus!) {
  setApplicationStatus(input: {id: $id, status: $status}) { application { id } } }"""

INITECH_PEOPLE = [
    ("peter@initech.example", "Peter", "Gibbons", "Engineering"),
    ("michael@initech.example", "Michael", "Bolton", "Engineering"),
    ("samir@initech.example", "Samir", "Nagheenanajar", "Engineering"),
    ("milton@initech.example", "Milton", "Waddams", "Support"),
    ("joanna@initech.example", "Joanna", "Ångström", "Support"),
    ("lawrence@initech-contract.example", "Lawrence", "Ng", "Support"),
    ("tom@initech-contract.example", "Tom", "Smykowski", "Engineering"),
]


def write_through_the_api(old: Release, api: Api) -> None:
    """Data of the kind the previous release's users wrote, through its API."""
    operator = old.token(platform="operator")
    organizations = [("Initech", "bill@initech.example", "Bill", "Lumbergh")]
    if old.layout == 0:
        # An organisation whose admin has an address at acme.co, Acme Corp's domain: a release
        # before layout versions did not stop it; the migration gives acme.co to Acme Corp only.
        organizations.append(("Acme Labs", "lab@acme.co", "Lab", "Keeper"))
    for name, admin, first, last in organizations:
        variables = {"name": name, "plan": "PRO", "adminEmail": admin, "adminFirstName": first, "adminLastName": last}
        if old.layout > 0:  # organisations own their email domains
            variables["emailDomains"] = ["initech.example", "initech-contract.example"]
        api.graphql(operator, CREATE_ORGANIZATION, {"input": variables})
    admin = old.token(email="bill@initech.example")
    departments = {
        name: api.graphql(admin, CREATE_DEPARTMENT, {"name": name})["createDepartment"]["department"]["id"]
        for name in ("Engineering", "Support")
    }
    for email, first, last, department in INITECH_PEOPLE:
        person = {"email": email, "firstName": first, "lastName": last, "departmentId": departments[department]}
        api.graphql(admin, CREATE_EMPLOYEE, {"input": person})
    jobs = {}
    for title, department in (("TPS Report Auditor", "Support"), ("Printer Whisperer", "Engineering")):
        job = api.graphql(admin, CREATE_JOB, {"departmentId": departments[department], "title": title})
        jobs[title] = job["createJobPosting"]["jobPosting"]["id"]
        api.graphql(admin, PUBLISH_JOB, {"id": jobs[title]})
    decisions = [
        ("peter@initech.example", "TPS Report Auditor", ["REVIEWING", "ACCEPTED"]),
        ("michael@initech.example", "TPS Report Auditor", ["REJECTED"]),
        ("samir@initech.example", "TPS Report Auditor", []),
        ("milton@initech.example", "Printer Whisperer", ["REVIEWING"]),
        ("tom@initech-contract.example", "Printer Whisperer", []),
    ]
    for email, title, statuses in decisions:
        applied = api.graphql(old.token(email=email), APPLY, {"job": jobs[title]})["applyToJob"]["application"]["id"]
        for status in statuses:
            api.graphql(admin, SET_STATUS, {"id": applied, "status": status})


# --- what this release answers after the migration ----------------------------------------------

BY_NAME = """query($after: String) { organization { emailDomains
  employees(orderBy: NAME, first: 100, after: $after) { edges { node { email lastName } }
  pageInfo { hasNextPage endCursor } } } }"""
SEARCH = """query($search: String!) { organization { employees(search: $search, first: 100) {
  edges { node { email } } } } }"""
COUNTS = """{ organization { jobPostings(first: 100) { edges { node { title
  applicationCounts { total applied reviewing rejected accepted withdrawn } } } } } }"""


def check_organization(new: Release, api: Api, expected: Expected) -> None:
    print(f"   -- {expected.name} (admin {expected.admin})")
    check(api.status(expected.token) == 200, "the previous release's access token is accepted")
    if expected.api_key is not None:
        check(api.status(expected.api_key) == 200, "the API key made by the previous release is accepted")
    token = new.token(email=expected.admin)
    listed = api.graphql(token, BY_NAME)["organization"]
    emails = [edge["node"]["email"] for edge in listed["employees"]["edges"]]
    check(
        sorted(emails) == sorted(email for email, _first, _last in expected.people),
        f"orderBy: NAME lists {len(emails)} of {len(expected.people)} employees",
    )
    found = 0
    for email, first, last in expected.people:
        for name in (first, last):
            matches = api.graphql(token, SEARCH, {"search": name[:3]})["organization"]["employees"]["edges"]
            found += email in {edge["node"]["email"] for edge in matches}
    check(
        found == 2 * len(expected.people), f"name search finds {found} of {2 * len(expected.people)} expected matches"
    )
    counts = {
        edge["node"]["title"]: edge["node"]["applicationCounts"]
        for edge in api.graphql(token, COUNTS)["organization"]["jobPostings"]["edges"]
    }
    for title, statuses in expected.applications.items():
        wanted = {status.lower(): statuses.get(status, 0) for status in statuses} | {"total": sum(statuses.values())}
        got = {name: counts[title][name] for name in wanted}
        check(got == wanted, f"applicationCounts of {title!r}: {got}")
    check(listed["emailDomains"] == expected.domains, f"emailDomains {listed['emailDomains']}")
    hire = {"firstName": "New", "lastName": "Hire"}
    if expected.domains:
        email = f"new.hire@{expected.domains[0]}"
        created = api.graphql(token, CREATE_EMPLOYEE, {"input": {**hire, "email": email}})
        check(created["createEmployee"]["employee"]["email"] == email, f"createEmployee {email}")
    else:
        refused = api.errors(
            token, CREATE_EMPLOYEE, {"input": {**hire, "email": f"new.hire@{expected.admin.split('@')[1]}"}}
        )
        codes = [error["extensions"]["code"] for error in refused]
        check(codes == ["BAD_USER_INPUT"], f"createEmployee refused ({codes}): the organisation owns no domain")


# --- the run -------------------------------------------------------------------------------------


def install(commit: str, work: Path) -> Release:
    root = work / "previous"
    root.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    print(f"   {commit} ({git_subject(commit)}) in {root}")
    subprocess.run(["make", ".venv/.installed"], cwd=root, check=True, capture_output=True)
    return Release(
        f"previous release {commit}",
        root,
        str(root / ".venv" / "bin" / "python"),
        {},
        layout=layout_of(commit),
        api_keys="createApiKey" in git_show(commit, "schema.graphql"),
        commit=commit,
    )


def git_show(commit: str, path: str) -> str:
    """``path`` as ``commit`` has it; empty when it has no such file."""
    shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else ""


def layout_of(commit: str) -> int:
    """The data layout ``commit`` writes: its layout_version.CURRENT, 0 before layout versions."""
    found = re.search(r"^CURRENT: Final = (\d+)$", git_show(commit, "datastore/upkeep/layout_version.py"), re.MULTILINE)
    return 0 if found is None else int(found[1])


def git_subject(commit: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%cs %s", commit], capture_output=True, text=True, check=True
    ).stdout.strip()[:100]


def environment(data_dir: Path) -> dict[str, str]:
    cache = DatastoreSettings.from_env(os.environ).local_cache_dir.resolve()
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DYNAMODB_ENDPOINT", "HR_TABLE_NAME", "DYNAMODB_LOCAL_PORT", "WORKERS", "VIRTUAL_ENV")
    }
    return {
        **env,
        "PORT": str(free_port()),
        "DYNAMODB_LOCAL_DATA": str(data_dir),
        # The engine's jar and GraphiQL's bundles, fetched once into this checkout's cache: no
        # second npm download.
        "DYNAMODB_LOCAL_CACHE": str(cache),
        "GRAPHIQL_CACHE": str(cache),
    }


def upgrade(commit: str, work: Path) -> None:
    data_dir = work / "data"
    step(f"the previous release: git archive {commit}, its own virtualenv")
    old = install(commit, work)
    old.env = environment(data_dir)
    new = Release("this release", ROOT, sys.executable, environment(data_dir))
    expected = [
        Expected("alice@acme.co", domains=["acme.co"]),
        Expected("hank@globex.example", domains=["globex.example"]),
        Expected("bill@initech.example", domains=["initech-contract.example", "initech.example"]),
    ]
    if old.layout == 0:
        expected.append(Expected("lab@acme.co", domains=[]))

    step(f"`make run` of the previous release on {data_dir}: its demo data, then more through its API")
    with running(old, "make", "run", f"PORT={old.env['PORT']}") as api:
        write_through_the_api(old, api)
        for organization in expected:
            read_expected(old, api, organization)
            jobs = sum(sum(statuses.values()) for statuses in organization.applications.values())
            print(f"   {organization.name}: {len(organization.people)} employees, {jobs} applications")
        step("the previous release stopped as a process manager stops it: SIGTERM to its server")
    # A release that stops its engine with its server may still be tearing it down: only an
    # engine still there after a while was left running.
    deadline = time.monotonic() + ENGINE_EXIT_SECONDS
    while (left := engines.engines_on(data_dir)) and time.monotonic() < deadline:
        time.sleep(0.5)
    print(f"   engines still running on the data: {left or 'none'}")

    if left:
        step("this release's `server.py migrate` beside the engine the previous release left running")
        refused = shown(new.command("migrate"))
        check(refused.returncode == 2, f"refused with exit status {refused.returncode}")
        check(any(f"pid {left[0]}" in line for line in refused.stderr.splitlines()), "naming the engine's pid")
        for pid in left:  # started by this script's `make run`: ours to stop
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while engines.engines_on(data_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        check(engines.engines_on(data_dir) == [], "the leftover engine stopped")

    if old.layout < layout_version.CURRENT:
        migrate_first(old, new)
    else:
        step(f"this release's `server.py migrate` on layout {old.layout}, its own")
        same = shown(new.command("migrate"))
        check(same.returncode == 0 and "nothing to migrate" in same.stdout, "nothing to migrate")

    step("this release's server on the migrated data")
    with running(new, sys.executable, "server.py") as api:
        for organization in expected:
            check_organization(new, api, organization)

    step("this release's `server.py migrate` again")
    again = shown(new.command("migrate"))
    check(again.returncode == 0 and "nothing to migrate" in again.stdout, "nothing to do")


def migrate_first(old: Release, new: Release) -> None:
    """This release refusing the previous release's layout, then migrating it."""
    step("this release's `server.py run` before migrating")
    refused = shown(new.command("run", timeout=120))
    check(refused.returncode == 2, f"refused with exit status {refused.returncode}")
    check("`python server.py migrate`" in refused.stderr, "naming `python server.py migrate`")

    step("this release's `server.py migrate`")
    started = time.monotonic()
    migrated = shown(new.command("migrate"))
    print(f"   ({time.monotonic() - started:.1f} s)")
    lines = migrated.stdout.splitlines()
    if old.layout == 0:
        status = migrated.returncode
        check(status == 1, f"exit status {status}: done, one organisation left to an operator")
        check(
            any(line.endswith("Acme Labs: held by another organisation: acme.co") for line in lines),
            "Acme Labs' acme.co reported as Acme Corp's, not taken",
        )
    else:
        check(migrated.returncode == 0, f"exit status {migrated.returncode}")
    if "StreamSpecification" not in git_show(old.commit, "datastore/upkeep/provision.py"):
        # The refused `run` left the table as it was: the stream is still for migrate to turn on.
        check(any(line.endswith("turned its stream on (live updates)") for line in lines), "stream turned on here")
    check(lines[-1].endswith(f"is at layout {layout_version.CURRENT} now"), "stamped")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.upgrade_release", description=__doc__.split("\n")[0])
    parser.add_argument(
        "commit", nargs="?", default=PREVIOUS_RELEASE, help=f"the previous release (default {PREVIOUS_RELEASE})"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="hr-upgrade-"))
    started = time.monotonic()
    try:
        upgrade(args.commit, work)
    except CheckFailed as failed:
        print(f"\nupgrade-test FAILED: {failed} (files kept in {work})", file=sys.stderr)
        return 1
    for pid in engines.engines_on(work / "data"):  # none expected; never leave one behind
        os.kill(pid, signal.SIGKILL)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nupgrade-test passed: {args.commit} -> this checkout in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
