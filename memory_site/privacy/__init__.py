"""The project roof's privacy edge: export and erase everything of the caller's, across every app."""
