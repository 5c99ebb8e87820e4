"""Gitea and Forgejo: the REST v1 client, the forge, comment placement (file line numbers)."""
