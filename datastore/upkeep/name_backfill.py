"""Name entries for employees written before name search existed: ``python server.py index-names``.

Every employee write keeps an employee's name entries (``datastore.values.names``) in its own
transaction; employees written before that have none, so search and ``orderBy: NAME`` miss
them. This writes them, one transaction per employee: the entries as of the version read,
with a ConditionCheck that the employee is still at that version. An employee written in the
meantime wrote its own entries; the backfill reads it again and rewrites the same ones, so it
never leaves entries of a name that is gone. Running it again changes nothing but the copies.
"""

from __future__ import annotations

from datastore.errors import StaleVersion
from datastore.kinds import layout
from datastore.kinds.entities import Employee
from datastore.table import transact
from datastore.table.pagination import every
from datastore.table.scoped import Table
from datastore.tenants import employees
from datastore.values import items

# A write to the same employee between the read and the transaction: read and try again.
ATTEMPTS = 5


def _entries_at_version(emp: Employee) -> list[transact.Op]:
    still = transact.check(
        layout.EMPLOYEE.key_of(emp),
        "#version = :read",
        names={"#version": layout.VERSION},
        values={":read": items.n(emp.version)},
        on_failed=lambda _old: StaleVersion("the employee changed while its name entries were written"),
    )
    return [still, *employees.name_entry_ops(None, emp)]


async def index_employee(table: Table, emp: Employee) -> None:
    """Write ``emp``'s name entries, re-reading it while other writes change it."""
    current: Employee | None = emp
    for _ in range(ATTEMPTS):
        if current is None:
            return  # gone: nothing to index
        try:
            await table.write(_entries_at_version(current))
            return
        except StaleVersion:
            current = await employees.get_employee(table, emp.emp_id, consistent=True)
    raise StaleVersion(f"employee {emp.emp_id} kept changing; run the backfill again")


async def index_organization(table: Table) -> int:
    """Write the name entries of every employee of the table's tenant; how many employees."""
    count = 0
    async for emp in every(lambda request: employees.list_employees(table, request)):
        await index_employee(table, emp)
        count += 1
    return count
