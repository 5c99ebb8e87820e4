"""One job for every entry point: review, ask, describe, fix, pause, resume, help (`run.run`), used by the
webhook server's worker and by the CI commands (`prereview github|gitlab|gitea`)."""
