"""Evidence from running the code: the project's tests and base/head behaviour."""
