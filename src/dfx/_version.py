"""dfx's version, in a module of its own: what records and caches stamp, importable without the package's API."""

__version__ = "0.1.0"  # pyproject.toml [project] version
