"""The `prereview` command line; subcommands beyond `review` live in their own modules, loaded lazily."""

from .root import main

__all__ = ["main"]
