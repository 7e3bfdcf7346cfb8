"""A peer whose library is not installed (for the tests of the [peers] extra's skip)."""
from __future__ import annotations

from svibench.peers import Peer


class AbsentPeer(Peer):
    """Another library's inference; that library is missing here."""

    name = "test-absent-peer"
    libraries = ("svibench_no_such_library",)

    def init(self, model, rng):
        import svibench_no_such_library  # noqa: F401  (never reached: the pair is skipped first)
