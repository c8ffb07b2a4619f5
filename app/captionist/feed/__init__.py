"""The caption feed: captions for other apps (OBS, browsers, a web page for the room).

``hub`` keeps the session's caption events in order (any thread publishes, nobody waits);
``server`` serves them over HTTP from its own thread (caption page, Server-Sent Events, WebSocket,
plain text); ``text_file`` keeps a text file of the current lines for OBS text sources;
``service`` wires them to the session controller and the settings. The wire format is documented
in docs/caption-feed.md.
"""
