"""The frozen app's entry script (packaging/captionist.spec): the same ``main`` as ``captionist``."""

import sys

from captionist.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
