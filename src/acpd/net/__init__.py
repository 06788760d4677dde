"""Network access for the tools: an HTTPS client that only reaches public addresses."""
