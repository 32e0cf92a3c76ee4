"""Platforms: the chat frontends that call the API with a key on behalf of their own users."""
