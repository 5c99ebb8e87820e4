"""GitLab: the REST client, the forge, diff positions (line codes, ranges, suggestion offsets)."""
