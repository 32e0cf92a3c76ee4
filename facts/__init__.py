"""Legacies, their members (the tenancy), and the legacy facts families review and share."""
