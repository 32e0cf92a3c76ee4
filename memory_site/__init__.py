"""Legacy Memory: the Django project package (settings, URLs, database bootstrap, AI clients)."""
