"""Capture -> engine -> captions: the worker thread, the controller that wires it, and headless mode."""
