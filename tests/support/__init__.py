"""Reusable test support (scripted OpenAI-compatible server, ...)."""
