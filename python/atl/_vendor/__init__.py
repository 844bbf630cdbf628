"""Third-party code atl ships (each with its licence)."""
