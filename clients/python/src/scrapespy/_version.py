"""The client's version, in one place: the package and its User-Agent read it."""

__version__ = "0.1.0"
