"""Verified patches: ask the model for a fix, apply it in a scratch tree, prove it with the tests."""
