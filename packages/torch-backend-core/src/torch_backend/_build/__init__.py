"""Build support core ships for backend packages (used at build time only)."""
