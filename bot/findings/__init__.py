"""Findings: the model review of the diff, the scanners beside it, merging and plausibility checks."""
