"""The review pipeline: one ReviewContext per change, passed through a list of stages."""
