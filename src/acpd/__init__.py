"""acpd: an Agent Client Protocol daemon."""

__version__ = "0.1.0"
