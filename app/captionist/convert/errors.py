"""The one exception `captionist convert` raises for bad input."""


class ConversionError(RuntimeError):
    """A checkpoint could not be converted; the message is one line naming the problem."""
