"""The value types and rules every layer shares: items, settings, history, errors.

Imports nothing else of ours, so every other package can import it.
"""
