"""Paged lists: reading a large collection in chunks that still fit together.

Listing 50 000 pods in one response would make the API server build one enormous answer. A client
asks instead for ``limit=500`` and gets 500 items plus a ``continue`` token; passing the token back
returns the next 500 *from the same revision*, so the pages form one consistent snapshot even while
pods keep changing. The resourceVersion of the whole list is the first page's.

``ListPager`` (client-go ``tools/pager``) does the loop: the first page with the caller's options,
then pages with only the token (a resourceVersion may not be given with a continue token). If the
snapshot's revision is compacted away half-way, a page answers 410 Expired; the pager then falls back
to one unpaged list at the originally requested resourceVersion (``FullListIfExpired``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from controlplane.api.meta import Object
from controlplane.client.errors import ResourceExpired
from controlplane.client.rest import ListOptions

#: client-go's ``pager.defaultPageSize``.
DEFAULT_PAGE_SIZE = 500

PageFunc = Callable[[ListOptions], Awaitable[Object]]


@dataclass(frozen=True, slots=True)
class ListResult:
    """Every item of a (possibly paged) list, and the resourceVersion they are consistent at."""

    items: list[Object]
    resource_version: str
    #: True if the server answered in more than one page.
    paginated: bool


class ListPager:
    """Lists through ``page_fn`` in pages of ``page_size`` (0: in one request)."""

    def __init__(
        self, page_fn: PageFunc, *, page_size: int = DEFAULT_PAGE_SIZE, full_list_if_expired: bool = True
    ):
        self.page_fn = page_fn
        self.page_size = page_size
        self.full_list_if_expired = full_list_if_expired

    async def list(self, options: ListOptions) -> ListResult:
        if not options.limit and self.page_size:
            options = dataclasses.replace(options, limit=self.page_size)
        requested = options
        items: list[Object] = []
        resource_version: str | None = None
        paginated = False
        while True:
            try:
                page = await self.page_fn(options)
            except ResourceExpired:
                if not self.full_list_if_expired or not options.continue_:
                    raise
                # The snapshot expired between pages: one unpaged list at the requested resourceVersion.
                whole = await self.page_fn(dataclasses.replace(requested, limit=None, continue_=None))
                return ListResult(list(whole.get("items") or []), _resource_version(whole), paginated)
            items.extend(page.get("items") or [])
            if resource_version is None:
                resource_version = _resource_version(page)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return ListResult(items, resource_version, paginated)
            options = dataclasses.replace(
                options, continue_=token, resource_version=None, resource_version_match=None
            )
            paginated = True


def _resource_version(page: Object) -> str:
    return str((page.get("metadata") or {}).get("resourceVersion") or "")


__all__ = ["DEFAULT_PAGE_SIZE", "ListPager", "ListResult", "PageFunc"]
