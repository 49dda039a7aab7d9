"""Profiles that are boolean combinations of paths (``/a/b[@x > 2] and not(/a/c)``), for engines
that filter paths: :class:`ProfilePaths` lists the paths to filter and turns the paths' answers
into the profiles' answers. Every software engine uses it; the combination is evaluated once per
document over the matched paths, whatever the engine."""

from __future__ import annotations

from typing import Iterable, Sequence

from xpfilt.lang.xpath import And, Not, Or, Query, evaluate

__all__ = ["ProfilePaths"]


def _numbered(node, paths: list[Query]):
    """``node`` with each path leaf replaced by its index in ``paths`` (appended there)."""
    if isinstance(node, (And, Or)):
        return type(node)(tuple(_numbered(o, paths) for o in node.operands))
    if isinstance(node, Not):
        return Not(_numbered(node.operand, paths))
    paths.append(node)
    return len(paths) - 1


class ProfilePaths:
    """``paths``: the path queries to filter (a path profile is one of them, a combination adds
    each of its paths); :meth:`answer` maps matched path positions to matched profile
    positions."""

    def __init__(self, profiles: Sequence[Query]):
        self.profiles = tuple(profiles)
        self.combined = any(not q.is_path for q in self.profiles)
        if not self.combined:
            self.paths = self.profiles
            return
        paths: list[Query] = []
        self._plain: list[tuple[int, int]] = []  # (path position, profile position)
        self._clauses: list[tuple[object, int]] = []  # (clause over path positions, profile)
        for position, profile in enumerate(self.profiles):
            if profile.is_path:
                paths.append(profile)
                self._plain.append((len(paths) - 1, position))
            else:
                self._clauses.append((_numbered(profile.clause, paths), position))
        self.paths = tuple(paths)

    def answer(self, matched: Iterable[int]) -> list[int]:
        """The positions of the profiles that match, in increasing order, from the positions
        of the paths that match (in any order)."""
        if not self.combined:
            return sorted(matched)
        hits = set(matched)
        found = [profile for path, profile in self._plain if path in hits]
        found += [
            profile for clause, profile in self._clauses if evaluate(clause, hits.__contains__)
        ]
        return sorted(found)
