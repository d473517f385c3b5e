"""The package version, kept in one place (setup.cfg reads it)."""

__version__ = "0.1.0"
