"""prereview: on-prem pre-review bot."""

__version__ = "0.1.0"
