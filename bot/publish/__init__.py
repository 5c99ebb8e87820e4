"""Publishers: post a rendered Review to a forge (GitHub, GitLab), deduplicated by fingerprint."""
