"""Demo data written by `manage.py seed_demo`: one module per app, seeded in layer order."""
