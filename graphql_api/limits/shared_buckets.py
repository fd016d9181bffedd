"""Tenant buckets shared by the workers of one server: the limit holds per server, not per process.

With WORKERS=N the kernel hands connections to workers unevenly (one worker served 34,118
of 34,135 requests in a soak), and with buckets per process an organisation's limit was
whatever its connections happened to land on: one bucket's worth on one worker, N on N.
Here every worker of a server charges the same bucket, so an organisation gets
TENANT_COST_PER_SECOND (and one burst) from the server, whichever worker serves it.

The buckets are a table in a file of shared memory (/dev/shm, graphql_api/host/files.py),
mapped by each worker: the workers of one supervisor meet at the file named after it (its
pid and start time), so it works for ``server.py run`` and for ``uvicorn graphql_api.entrypoints.asgi:app
--workers N`` alike, with nothing handed down. The file is created by the first worker,
mode 0600 and never through a symlink; one left by a killed server is removed at the next
start. Layout: a header (magic, layout version, slot count) and SLOTS slots of 32 bytes, each
a tenant's key (the first 16 bytes of the BLAKE2b of its organisation id; zeros are an empty
slot), its tokens and the ``time.monotonic()`` of its last charge (float64 each):
CLOCK_MONOTONIC, one clock for every process on the host. A tenant's slot is one of the WAYS
slots of the set its key picks; when all are other tenants', the least recently charged of
them becomes the newcomer's, full, as the LRU of one process evicts (limits/tenant_rate.py).
A charge holds an ``flock`` on the file (the kernel drops it if its holder dies) and, since
the threads of one process share that lock, a thread lock too; it costs a few microseconds.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import mmap
import os
import stat
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from graphql_api.host.files import owner_tag, remove_orphans, runtime_dir, supervisor_pid
from graphql_api.limits.tenant_rate import Admission, take

log = logging.getLogger("hr.limits")

PREFIX: Final = "hr-tenant-buckets-v1-"
MAGIC: Final = b"HRTENANT"
VERSION: Final = 1
WAYS: Final = 8
SLOTS: Final = 16_384  # 2,048 sets of 8: 512 KiB
_HEADER: Final = struct.Struct("<8sII")
_HEADER_SIZE: Final = 64
_SLOT: Final = struct.Struct("<16sdd")
_EMPTY: Final = bytes(16)


class SharedTenantBuckets:
    """Token buckets keyed by organisation id, in a file every worker of a server maps."""

    def __init__(
        self,
        path: Path,
        per_second: float,
        burst: float,
        *,
        slots: int = SLOTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_second <= 0 or burst <= 0:
            raise ValueError("a tenant bucket needs a positive rate and burst")
        if slots <= 0 or slots % WAYS:
            raise ValueError(f"the slots must be a positive multiple of {WAYS}")
        self.path = path
        self.per_second = per_second
        self.burst = burst
        self.clock = clock
        self._sets = slots // WAYS
        size = _HEADER_SIZE + slots * _SLOT.size
        self._fd = _open_own(path)
        try:
            with _Locked(self._fd):
                _initialise(self._fd, size, slots)
            self._map = mmap.mmap(self._fd, size)
        except BaseException:
            os.close(self._fd)
            raise
        self._lock = threading.Lock()

    def charge(self, tenant: str, units: float) -> Admission:
        """Take ``units`` from ``tenant``'s bucket if it holds them; otherwise take nothing."""
        key = hashlib.blake2b(tenant.encode(), digest_size=16).digest()
        first = _HEADER_SIZE + (int.from_bytes(key[:8], "little") % self._sets) * WAYS * _SLOT.size
        with self._lock, _Locked(self._fd):
            now = self.clock()
            offset, tokens, updated = self._slot(key, first, now)
            # A charge from before a clock that went back (another boot's file) starts full.
            elapsed = now - updated if updated <= now else float("inf")
            tokens, admission = take(tokens, elapsed, units, self.per_second, self.burst)
            _SLOT.pack_into(self._map, offset, key, tokens, now)
            return admission

    def _slot(self, key: bytes, first: int, now: float) -> tuple[int, float, float]:
        """The offset of ``key``'s slot in its set, its tokens and last charge; a new slot is full."""
        free: int | None = None
        oldest, oldest_updated = first, float("inf")
        for offset in range(first, first + WAYS * _SLOT.size, _SLOT.size):
            found, tokens, updated = _SLOT.unpack_from(self._map, offset)
            if found == key:
                return offset, tokens, updated
            if found == _EMPTY:
                if free is None:
                    free = offset
            elif updated < oldest_updated:
                oldest, oldest_updated = offset, updated
        return (oldest if free is None else free), self.burst, now

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)


class _Locked:
    """``flock`` on the table's file, held for one charge (or the table's initialisation)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *_exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)


def _open_own(path: Path) -> int:
    """Open (creating) the table: never through a symlink, and only a regular file of our own."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        raise PermissionError(f"{path} is not a file of this user")
    return fd


def _initialise(fd: int, size: int, slots: int) -> None:
    """Give a new (empty) file its header and zeroed slots; check an existing one's."""
    header = _HEADER.pack(MAGIC, VERSION, slots)
    if os.fstat(fd).st_size == 0:
        os.ftruncate(fd, size)  # the slots read as zeros: empty
        os.pwrite(fd, header, 0)
        return
    if os.fstat(fd).st_size != size or os.pread(fd, len(header), 0) != header:
        raise ValueError("the shared tenant buckets' file has another layout")


def for_this_worker(per_second: float, burst: float) -> SharedTenantBuckets | None:
    """The buckets this worker shares with its siblings; None in a process that is not a
    spawned worker (one server process, Lambda) or where they cannot be shared (not Linux)."""
    supervisor = supervisor_pid()
    if supervisor is None:
        return None
    tag = owner_tag(supervisor)
    if tag is None:
        return None
    where = runtime_dir()
    remove_orphans(where, PREFIX)
    try:
        return SharedTenantBuckets(where / f"{PREFIX}{tag}", per_second, burst)
    except (OSError, ValueError) as error:
        # Never fail to serve over it: per-process buckets, as before, and say so.
        log.warning("tenant buckets not shared between workers (%s); each worker keeps its own", error)
        return None


def table_of(pid: int) -> Path | None:
    """Where the buckets of the workers ``pid`` supervises live, if it is running."""
    tag = owner_tag(pid)
    return None if tag is None else runtime_dir() / f"{PREFIX}{tag}"
