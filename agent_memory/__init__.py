"""Versioned agent memories, places of interest, memory tools and the /memory command."""
