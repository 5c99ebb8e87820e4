"""The change under review: git access, the parsed diff, secret redaction."""
