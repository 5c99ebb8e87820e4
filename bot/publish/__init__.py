"""Publishing a Review: one flow (flow.py) for every forge, deduplicated by fingerprint; per-forge options."""
