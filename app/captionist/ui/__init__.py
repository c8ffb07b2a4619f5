"""The desktop app: main window, caption overlay, tray icon (PySide6)."""
