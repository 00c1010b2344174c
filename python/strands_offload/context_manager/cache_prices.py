"""The providers' prompt-cache prices and lifetimes, as the context manager plans with them.

Public for simulations (``strands_offload.bench``'s billing simulator reads the same table, so
that what the manager plans with and what the simulator bills cannot drift apart):

- :data:`READ_PRICE`: token equivalents billed for a cached token read;
- :data:`WRITE_PRICES`: token equivalents billed for a token written, by the entry's lifetime in
  seconds (five minutes, an hour);
- :func:`ttl_seconds`: the lifetime of an entry written under a cache point's ``ttl``.
"""

from __future__ import annotations

from ._prompt_cache import READ_PRICE, WRITE_PRICES, ttl_seconds

__all__ = ["READ_PRICE", "WRITE_PRICES", "ttl_seconds"]
