"""pagination: the bound of a page a caller asks for."""

from __future__ import annotations

import pytest

from datastore.errors import InvalidInput
from datastore.table import pagination
from datastore.table.pagination import MAX_PAGE_SIZE


@pytest.mark.parametrize("first", [0, 1, MAX_PAGE_SIZE])
def test_page_size__within_bounds__is_accepted(first: int) -> None:
    assert pagination.checked_page_size(first) == first


@pytest.mark.parametrize("first", [-1, MAX_PAGE_SIZE + 1])
def test_page_size__out_of_bounds__raises_invalid_input(first: int) -> None:
    with pytest.raises(InvalidInput):
        pagination.checked_page_size(first)
