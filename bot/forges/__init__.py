"""Forges: where a change comes from and where its review goes (local git, GitHub, GitLab)."""
