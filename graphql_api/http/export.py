"""``GET /export``: an admin downloads their whole organisation, resumably.

The body is the export itself (datastore/lifecycle/export_format.py), gzip-compressed as it
is made and streamed, so the server holds a few pages of it at a time, however large the
organisation. ``Content-Type: application/gzip`` (the file, not a transfer encoding: the
GZip middleware leaves it as it is) with a ``Content-Disposition`` naming the file.

Resuming: HTTP Range cannot resume a download made from a live table, whose bytes a second
request would not reproduce. The stream carries checkpoint lines instead, every
CHECKPOINT_EVERY items, and each ends a gzip flush point, so every line up to a checkpoint
reaches the client whole. A client whose connection dropped keeps the lines up to the last
checkpoint it received and asks ``GET /export?after=<that checkpoint>``: the answer is a new
gzip stream holding the lines after it (no header), whose end line counts the whole export.
A checkpoint is signed and bound to the organisation (request/cursors.py): one edited, or
carried to another organisation, is BAD_USER_INPUT.

Who: a bearer token of an ACTIVE admin of an ACTIVE organisation whose role is still admin,
or an ADMIN API key (FORBIDDEN for any other role, UNAUTHENTICATED otherwise), checked with
one BatchGetItem as the GraphQL active check does. Budget: the export's read units are
charged to the organisation's bucket (limits/tenant_rate.py) at UNITS_PER_RCU as it goes;
when the bucket is empty the stream waits for it to refill, so an export takes the
organisation's share of capacity, never more. Audit: the ``organization.export`` event is
written once the end line is sent, naming the admin (or key).
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from datastore.errors import DatastoreError
from datastore.kinds.entities import EmployeeStatus, OrganizationStatus, Role
from datastore.signin.identities import organization_and_employee
from datastore.tenancy.scope import LifecycleScope, TenantScope
from datastore.tenants.organizations import get_organization
from datastore.values import items
from datastore.values.ids import OrgId
from graphql_api.execution.errors import (
    ApiError,
    AuthReason,
    bad_input,
    forbidden,
    token_missing,
    translate,
    unauthenticated,
)
from graphql_api.observability.refusals import ErrorResponse
from graphql_api.request.principal import Principal, principal_of
from graphql_api.request.services import Services

if TYPE_CHECKING:
    from datastore.lifecycle import export

log = logging.getLogger("hr.export")

# Read capacity units to query-cost units, as docs/security/fair-tenants.md measured for the
# directory page (about 50 units an RCU).
UNITS_PER_RCU: Final = 50
# Lines produced per flush to the client, at most.
LINES_PER_TRIP: Final = 200
CURSOR_CONNECTION: Final = "export"
STATUS: Final = {"UNAUTHENTICATED": 401, "FORBIDDEN": 403, "BAD_USER_INPUT": 400, "NOT_FOUND": 404, "CONFLICT": 409}


class ExportDownload:
    """The /export endpoint."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def endpoint(self, request: Request) -> Response:
        try:
            principal = self._admin(request)
            assert principal.org_id is not None
            resume = self._resume(request, principal.org_id)
            await self._check_active(principal)
        except ApiError as error:
            return ErrorResponse(STATUS.get(str(error.extensions["code"]), 503), error)
        except DatastoreError as error:
            translated = translate(error)
            if translated is None:
                raise
            return ErrorResponse(STATUS.get(str(translated.extensions["code"]), 503), translated)
        org_id = principal.org_id
        stamp = items.timestamp(resume.exported_at if resume is not None else items.now()).replace(":", "")
        return StreamingResponse(
            self._body(principal, org_id, resume),
            media_type="application/gzip",
            headers={
                "Content-Disposition": f'attachment; filename="{org_id}-{stamp}.jsonl.gz"',
                "Cache-Control": "no-store",
            },
        )

    # --- the checks --------------------------------------------------------------------------

    @staticmethod
    def _admin(request: Request) -> Principal:
        principal = principal_of(request)
        if principal is None:
            raise token_missing()
        if principal.org_id is None:
            raise forbidden("platform operators export an organisation with `server.py export`")
        if principal.role is not Role.ADMIN:
            raise forbidden("only admins may export the organisation")
        return principal

    def _resume(self, request: Request, org_id: OrgId) -> export.Resume | None:
        after = request.query_params.get("after")
        if after is None:
            return None
        # The export's modules are imported by the requests that export: the rest of the
        # process, its start included, runs without them.
        from datastore.lifecycle import export, walk
        from datastore.lifecycle.export_format import Tally

        fields = self.services.cursors.decode(after, org_id, CURSOR_CONNECTION)
        try:
            family = fields["family"]
            walk.family_named(family)
            tally = Tally(Counter({kind: int(count) for kind, count in _pairs(fields["counts"])}))
            return export.Resume(
                walk.Position(family, fields["pk"], fields["sk"]), tally, items.parse_timestamp(fields["at"])
            )
        except (KeyError, ValueError):
            raise bad_input("after", "is not a checkpoint of this export") from None

    def _checkpoint(self, org_id: OrgId, resume: export.Resume) -> str:
        counts = ",".join(f"{kind}={count}" for kind, count in sorted(resume.tally.kinds.items()))
        fields = {
            "family": resume.position.family,
            "pk": resume.position.pk,
            "sk": resume.position.sk,
            "counts": counts,
            "at": items.timestamp(resume.exported_at),
        }
        return self.services.cursors.encode(org_id, CURSOR_CONNECTION, fields)

    async def _check_active(self, principal: Principal) -> None:
        """The caller's organisation is ACTIVE and, for a token, they are an ACTIVE admin still."""
        assert principal.org_id is not None
        table = self.services.datastore.table(TenantScope(principal.org_id, principal.subject))
        if principal.api_key:  # the key's own status was read when it was authenticated
            organization = await get_organization(table)
            if organization is None or organization.status is not OrganizationStatus.ACTIVE:
                raise unauthenticated("the organisation is not active", AuthReason.ACCOUNT_INACTIVE)
            return
        emp_id = principal.employee_id
        assert emp_id is not None
        organization, employee = await organization_and_employee(table, emp_id)
        if organization is None or organization.status is not OrganizationStatus.ACTIVE:
            raise unauthenticated("the organisation is not active", AuthReason.ACCOUNT_INACTIVE)
        if employee is None or employee.status is not EmployeeStatus.ACTIVE:
            raise unauthenticated("the employee is not active", AuthReason.ACCOUNT_INACTIVE)
        if employee.role is not principal.role:
            raise unauthenticated(
                "the token's role is no longer the employee's role: get a new token", AuthReason.ROLE_CHANGED
            )

    # --- the stream --------------------------------------------------------------------------

    async def _body(self, principal: Principal, org_id: OrgId, resume: export.Resume | None) -> AsyncIterator[bytes]:
        from datastore.lifecycle import export
        from datastore.lifecycle.export_format import COMPRESSION

        reader = self.services.datastore.table(LifecycleScope(org_id, "export", principal.subject))
        job = export.Export(
            reader,
            org_id,
            source=self.services.datastore.table_name,
            resume=resume,
            checkpoint=lambda at: self._checkpoint(org_id, at),
        )
        lines = job.lines()
        compressor = zlib.compressobj(COMPRESSION, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip framing
        finished = False
        while not finished:
            try:
                batch, finished = await _next_lines(lines)
            except DatastoreError as error:
                # The response has begun: end it without its end line, which tells the client
                # the export is incomplete; it resumes after the last checkpoint it received.
                log.warning("the export of %s stopped: %s", org_id, error)
                return
            chunk = compressor.compress(b"".join(batch))
            # A flush point after every checkpoint: each line before it reaches the client whole.
            chunk += compressor.flush(zlib.Z_FINISH if finished else zlib.Z_SYNC_FLUSH)
            await self._pay(org_id, job.meter.settle())
            yield chunk
        await export.record(self.services.datastore.table(TenantScope(org_id, principal.subject)), org_id, job.tally)
        log.info("exported organisation %s: %s items, %.1f RCU", org_id, job.tally.items, job.meter.read_units)

    async def _pay(self, org_id: OrgId, read_units: float) -> None:
        """Charge ``read_units`` to the organisation's bucket, waiting while it is empty."""
        buckets = self.services.tenant_buckets
        if buckets is None:
            return
        owed = read_units * UNITS_PER_RCU
        # In parts no larger than half a full bucket, so every part is payable once it refills.
        part = self.services.settings.tenant_cost_burst / 2
        while owed > 0:
            charge = min(owed, part)
            admission = buckets.charge(org_id, charge)
            if admission.admitted:
                owed -= charge
            else:
                await asyncio.sleep(admission.retry_after)


async def _next_lines(lines: AsyncIterator[bytes]) -> tuple[list[bytes], bool]:
    """Up to LINES_PER_TRIP lines, ending early after a checkpoint; and whether that was all."""
    batch: list[bytes] = []
    async for line in lines:
        batch.append(line)
        if line.startswith(b'{"checkpoint"') or len(batch) >= LINES_PER_TRIP:
            return batch, False
    return batch, True


def _pairs(counts: str) -> Iterator[tuple[str, str]]:
    for pair in counts.split(",") if counts else []:
        kind, _, count = pair.partition("=")
        yield kind, count
