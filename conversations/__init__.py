"""Conversations, the message log, rolling summaries, archived chunks, session state and the agent turn."""
