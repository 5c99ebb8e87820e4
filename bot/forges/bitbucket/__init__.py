"""Bitbucket Data Center / Server: REST client, line placement, publishing, Code Insights, webhook, CI."""
