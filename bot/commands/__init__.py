"""Subcommands beyond `review`: each module exposes a click command named `command`, loaded lazily."""
