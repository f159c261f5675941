"""The error a malformed or unknown hardware profile raises."""

from dfx.errors import DfxError

__all__ = ["HardwareProfileError"]


class HardwareProfileError(DfxError):
    """A hardware profile could not be found or failed validation.

    The message is one line: the profile (id or file), the field, and what was expected there.
    """
