"""Test doubles for the engine and the sounddevice module."""
