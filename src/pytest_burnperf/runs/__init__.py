"""How a run is carried out: process rounds (fresh or forked), same-session comparisons between
environments, turn-taking pairs, the reference environments and the automatic reference.

Imports ``core``, ``host``, ``devices`` and ``storage``; never pytest.
"""
