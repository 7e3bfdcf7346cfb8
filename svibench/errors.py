"""Exceptions shared across svibench's modules."""

__all__ = ["Diverged"]


class Diverged(FloatingPointError):
    """Raised by an algorithm whose state became non-finite or invalid (run status ``diverged``)."""
