"""Keyword alerts: words or names that, when spoken, are highlighted and announced.

``keywords`` parses the user's list and finds it in words (the overlay, the transcript view);
``watcher`` follows a session's committed tokens and reports each spoken keyword once.
"""
