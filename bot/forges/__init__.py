"""Forges: where a change comes from and where its review goes; one folder per code host behind base.Forge."""
