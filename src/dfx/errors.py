"""The errors dfx raises on bad input. Each message is one line naming the problem and the fix."""

__all__ = ["DfxError", "CaptureError", "ModelSpecError"]


class DfxError(Exception):
    """Base class: a user-facing error whose message is one line, printed without a traceback."""


class CaptureError(DfxError):
    """The model could not be captured (not a module, inputs don't match, every tracer failed)."""


class ModelSpecError(DfxError):
    """A model name, file or Hugging Face config could not be turned into a model."""
