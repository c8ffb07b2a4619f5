"""One desktop app per user: a second launch asks the first to come forward, then exits.

Usage::

    guard = InstanceGuard()               # key: paths.instance_name() (per user and config dir)
    if not guard.claim():                 # another instance runs: it was asked to come forward
        return 0
    guard.activated.connect(bring_window_forward)

Mechanism: the first instance listens on a ``QLocalServer`` named by the key; a later one connects,
sends ``ACTIVATE`` and leaves. A socket left by a crashed instance (nobody answers on it) is removed
and taken over, so it never blocks a start. If listening fails for another reason the app still
starts (two instances are better than none). Owned by the GUI thread; ``activated`` is emitted from
its event loop.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QAbstractSocket, QLocalServer, QLocalSocket

from captionist import paths
from captionist.pipeline.signals import emit

ACTIVATE = b"activate\n"
CONNECT_TIMEOUT_MS = 1000


class InstanceGuard(QObject):
    activated = Signal()  # a later launch asked this instance to show its window

    def __init__(self, key: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.key = key or paths.instance_name()
        self.server: QLocalServer | None = None

    def _ask_running_instance(self) -> bool:
        """Tell a running instance to come forward; False if none answers on the key."""
        sock = QLocalSocket()
        sock.connectToServer(self.key)
        if not sock.waitForConnected(CONNECT_TIMEOUT_MS):
            return False
        sock.write(ACTIVATE)
        sock.flush()
        sock.waitForBytesWritten(CONNECT_TIMEOUT_MS)
        sock.disconnectFromServer()
        if sock.state() != QLocalSocket.LocalSocketState.UnconnectedState:
            sock.waitForDisconnected(CONNECT_TIMEOUT_MS)
        return True

    def claim(self) -> bool:
        """True if this process is now the instance (it listens on the key); False if another one
        runs and was asked to come forward."""
        if self._ask_running_instance():
            return False
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.key):
            if server.serverError() == QAbstractSocket.SocketError.AddressInUseError:
                if self._ask_running_instance():  # it started meanwhile
                    return False
                QLocalServer.removeServer(self.key)  # left by a crashed instance: nobody answers
            server.listen(self.key)
        if server.isListening():
            server.newConnection.connect(self._on_connection)
            self.server = server
        return True

    def _on_connection(self) -> None:
        """A later launch connected: it sends its message at once, so read it here and hang up."""
        assert self.server is not None
        while self.server.hasPendingConnections():
            sock = self.server.nextPendingConnection()
            if sock.bytesAvailable() or sock.waitForReadyRead(CONNECT_TIMEOUT_MS):
                if bytes(sock.readAll().data()).startswith(ACTIVATE.strip()):
                    emit(self.activated)
            sock.abort()
            sock.deleteLater()

    def close(self) -> None:
        """Stop listening (at exit; a new instance may then start)."""
        if self.server is not None:
            self.server.close()
            self.server = None
