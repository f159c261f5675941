"""Each test's capture cache is its own empty folder, never the user's ~/.cache/dfx (dfx.cache), so no
test reads a graph another test captured."""

import pytest


@pytest.fixture(autouse=True)
def _capture_cache_in_tmp(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DFX_CACHE_DIR", str(tmp_path_factory.mktemp("dfx-cache")))
