"""Dashboard pages of the conversations app, one module per page family (routes in urls.py)."""
