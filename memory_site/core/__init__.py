"""The shared library every app builds on: AI clients, API plumbing, text and language rules."""
