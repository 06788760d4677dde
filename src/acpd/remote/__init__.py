"""The shared daemon (issue 12): `acpd serve --remote=auto` forwards to one per-user `acpd
daemon` over a private Unix socket; sessions outlive their editor window."""
