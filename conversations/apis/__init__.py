"""The REST API of the conversations app, one module per resource family (routes in api_urls.py)."""
