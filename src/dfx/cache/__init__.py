"""The persistent capture cache (:mod:`dfx.cache.store`) and its ``dfx cache`` commands (:mod:`dfx.cache.command`).

See ``docs/sweeps.md`` ("The capture cache").
"""

from dfx.cache.store import CACHE_SCHEMA, CacheInfo, CaptureCache, CaptureKey, default_cache_dir, definition_digest

__all__ = ["CACHE_SCHEMA", "CacheInfo", "CaptureCache", "CaptureKey", "default_cache_dir", "definition_digest"]
