"""Pages of a single-partition Query, with a resumable start key for every item."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from datastore.errors import Field, InvalidInput

T = TypeVar("T")
U = TypeVar("U")

StartKey = dict[str, str]
"""Where a Query resumes: the key attributes (table and index) of the last item seen."""

DEFAULT_PAGE_SIZE: Final = 20
MAX_PAGE_SIZE: Final = 100


def checked_page_size(first: int, field: Field = "first") -> int:
    """``first`` when a page may hold that many items (0 to MAX_PAGE_SIZE); InvalidInput otherwise."""
    if not 0 <= first <= MAX_PAGE_SIZE:
        raise InvalidInput(field, f"must be between 0 and {MAX_PAGE_SIZE}")
    return first


@dataclass(frozen=True, slots=True)
class PageRequest:
    first: int = DEFAULT_PAGE_SIZE
    after: StartKey | None = None
    descending: bool = False


@dataclass(frozen=True, slots=True)
class PageQuery(Generic[T]):
    """Which list a page is read from: one partition (of the table or GSI1), the sort-key
    prefix its items share, and how an item becomes an entity: ``Table.page`` reads it."""

    partition_key: str
    convert: Callable[[dict[str, Any]], T]
    index: str | None = None
    sk_prefix: str | None = None


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: Sequence[T]
    # cursors[i] resumes the list just after items[i].
    cursors: Sequence[StartKey]
    has_next: bool

    def map(self, convert: Callable[[T], U]) -> Page[U]:
        return Page([convert(item) for item in self.items], self.cursors, self.has_next)

    @property
    def end_cursor(self) -> StartKey | None:
        return self.cursors[-1] if self.cursors else None


async def every(fetch: Callable[[PageRequest], Awaitable[Page[T]]], page_size: int = MAX_PAGE_SIZE) -> AsyncIterator[T]:
    """Every item of a list, one page (one Query) at a time: for commands that walk a whole
    list (server.py check-counts, index-names), never for a request."""
    request = PageRequest(first=page_size)
    while True:
        page = await fetch(request)
        for item in page.items:
            yield item
        if not page.has_next:
            return
        request = PageRequest(first=page_size, after=page.end_cursor)
