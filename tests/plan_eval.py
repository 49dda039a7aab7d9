"""Evaluate a plan on expat events (no clock): the plan-level check shared by several tests."""

from __future__ import annotations

from xpfilt.compiler.custom import Plan
from xpfilt.model.stacks import ClusterStacks
from xpfilt.software.events import EventKind


def plan_matches(plan: Plan, events) -> tuple[int, ...]:
    """Sorted query numbers that the plan's stacks say match the document."""
    out = []
    ids = {name: i + 1 for i, name in enumerate(plan.tags)}
    for cluster in plan.clusters:
        stacks, open_tags = ClusterStacks(cluster, len(plan.tags)), []
        for event in events:
            if event.kind is EventKind.OPEN:
                tag = ids.get(event.name, 0)
                stacks.push(tag, open_tags[-1] if open_tags else 0, len(open_tags) + 1)
                open_tags.append(tag)
            elif event.kind is EventKind.CLOSE:
                stacks.pop()
                open_tags.pop()
        out += [cluster.queries[i].number for i in stacks.matched_queries()]
    return tuple(sorted(out))
