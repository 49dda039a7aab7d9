"""How many bytes per cycle a W-byte front end could sustain (issue 18), before building it: the
byte stream against the stacks' one event per cycle.

A W-byte parser takes a beat of W bytes per cycle; the open and close tags ending in a beat
become events (a self-closing tag two) that queue for the stacks, which take one event per
cycle (or two). The parser stalls while the beat's events do not fit in the queue. This script
runs that queue over the real documents (events placed at the byte that ends their tag; comments,
CDATA, PIs and the DOCTYPE produce none) and prints the sustained bytes per cycle for W = 1, 2,
4, 8, queue depths 4 and 16, one and two events per cycle: an upper bound for the RTL of issue
18 (which also has a document boundary and a readout to respect), and the queue size to build.
Workloads: the 100 NITF documents, the two XMark documents, two generated 2.2 MB NITF
documents and their compact form (one tag per line, the worst case: ~5.5 bytes per event).
Saved to bench/results/wide_front_end_bound.{json,md}.
"""

from __future__ import annotations

import re
import sys

from common import publish, wide_workloads

#: A start tag (group 1: "/" if self-closing), an end tag, or markup that makes no event.
_MARKUP = re.compile(
    rb"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>"
    rb"|</[^>]*>|<[^>]*?(/?)>",
    re.S,
)


def event_ends(data: bytes) -> list[tuple[int, int]]:
    """(offset of the byte that ends a tag, events it makes), in document order."""
    out = []
    for m in _MARKUP.finditer(data):
        text = m.group()
        if text.startswith((b"<!", b"<?")):
            continue
        out.append((m.end() - 1, 2 if m.group(1) else 1))
    return out


def sustained(documents: list[bytes], width: int, depth: int, drain: int) -> float:
    """Bytes per cycle over ``documents`` back to back (see the module docstring)."""
    cycles = total = 0
    for data in documents:
        ends = event_ends(data)

        queued = 0
        position = k = 0
        while position < len(data) or queued:
            if position < len(data):
                beat_end = min(position + width, len(data))
                made = 0
                j = k
                while j < len(ends) and ends[j][0] < beat_end:
                    made += ends[j][1]
                    j += 1
                if queued + made <= depth or made > depth and queued == 0:
                    position, k = beat_end, j
                    queued += made
            queued = max(0, queued - drain)
            cycles += 1
        total += len(data)
    return total / cycles


def main() -> None:
    sets = wide_workloads()
    rows = []
    for label, docs in sets:
        events = sum(n for d in docs for _, n in event_ends(d))
        size = sum(map(len, docs))
        for drain in (1, 2):
            for depth in (4, 16):
                row = {
                    "workload": label,
                    "bytes_per_event": size / events,
                    "events_per_cycle": drain,
                    "queue_depth": depth,
                }
                for width in (1, 2, 4, 8):
                    row[f"W{width}"] = sustained(docs, width, depth, drain)
                rows.append(row)
                print(
                    f"{label:44} {size / events:5.1f} B/event, drain {drain}, queue {depth:2}: "
                    + ", ".join(f"W={w} {row[f'W{w}']:.2f}" for w in (1, 2, 4, 8)),
                    file=sys.stderr,
                )
    publish(
        "wide_front_end_bound",
        rows,
        [
            ("workload", "documents"),
            ("bytes_per_event", "bytes per event"),
            ("events_per_cycle", "events per cycle"),
            ("queue_depth", "queue"),
            ("W1", "W=1"),
            ("W2", "W=2"),
            ("W4", "W=4"),
            ("W8", "W=8"),
        ],
        "A W-byte front end: sustained bytes per cycle (queue model, an upper bound)",
        "Each cycle the parser takes W bytes if the events ending in them fit in the queue; "
        "the stacks take 1 (or 2) events per cycle. No document boundary or readout costs "
        "(the RTL adds those). Issue 18's goal: >= 3.5 bytes/cycle at W = 4 on NITF and XMark.",
    )


if __name__ == "__main__":
    main()
