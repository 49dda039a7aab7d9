"""Profile updates on the programmable engine as a publish/subscribe user sees them (issue 16,
part 3): the time from a changed profile file to the new configuration active = generating the
stream on the host (parse the profile file, place, stream bytes) + shifting it in (one bit per
cycle at the engine's clock, 100 MHz) + waiting for the document in flight to end (the commit
happens at a document boundary: the longest NITF document, one byte per cycle, is counted).

For 1,024 / 4,096 / 16,384 columns (clusters of 128, a dictionary of 127 tags up to 16 bytes),
loaded with the
generated depth-8 NITF queries :func:`xpfilt.compiler.programmable.configure` places (until no room is
left), then every 64th of them removed in place (``reconfigure``: configure() leaves no column
free); the added profile is the first generated query not loaded that fits the columns left:

* full reload: :func:`xpfilt.compiler.programmable.configure` + the full stream;
* add one profile: ``xpfilt configure --previous`` (:func:`xpfilt.compiler.programmable.reconfigure`:
  parse the new file, read the loaded full stream, keep every query in place, place the new
  one) + its delta stream (only the clusters that change); remove one likewise;
* for comparison, adding one by regenerating the full stream (before format 3: the only way).

Saved to bench/results/config_update.{json,md}.
"""

from __future__ import annotations

import sys
import time

from common import best_time, publish

from xpfilt import workloads
from xpfilt.compiler.programmable import HardwareSpec, configure, reconfigure
from xpfilt.lang.xpath import load_queries
from xpfilt.paths import shared_data

CLOCK_HZ = 100e6
SIZES = (8, 32, 128)  # clusters of 128 columns
GOAL_MS = 10.0
CPU = time.process_time  # host time as on an idle core: the machine is shared


def main() -> None:
    schema = workloads.DtdSchema.load(shared_data() / "nitf/nitf-2-5.dtd")
    texts = workloads.generate_queries(
        schema,
        workloads.QueryGenConfig(
            count=6000, max_depth=8, p_wildcard=0.15, p_descendant=0.15, seed=7
        ),
    )
    longest_doc = max(p.stat().st_size for p in (shared_data() / "nitf/docs").glob("*.xml"))
    wait_ms = longest_doc / CLOCK_HZ * 1e3
    rows = []
    for clusters in SIZES:
        spec = HardwareSpec(clusters=clusters, columns=128, max_tag_len=16, tags=127)
        columns = spec.clusters * spec.columns
        # the loaded set: the queries configure() places; the added profile: the first other
        # generated query that fits in the columns left (without moving any loaded one)
        loaded = texts
        while True:  # configure() of fewer queries packs them differently: to a fixpoint
            placed = configure(load_queries(loaded).queries, spec)
            if len(placed.readout_bit) == len(loaded):
                break
            loaded = [loaded[n - 1] for n in sorted(placed.readout_bit)]
        # unsubscribe every 64th profile (configure() leaves no column free), in place
        loaded = [t for i, t in enumerate(loaded) if i % 64 != 63]
        previous = reconfigure(load_queries(loaded).queries, placed.stream(), spec).stream()
        free = columns - sum(t.count("/") - t.count("//") for t in loaded)
        added = next(
            t
            for t in texts
            if t not in loaded
            and not reconfigure(load_queries(loaded + [t]).queries, previous, spec).rejected
        )

        def full(lines):
            return configure(load_queries(lines).queries, spec).stream()

        def update(lines):
            return reconfigure(load_queries(lines).queries, previous, spec)

        full_s = best_time(lambda: full(loaded), 7, CPU)
        add_full_s = best_time(lambda: full(loaded + [added]), 7, CPU)
        add_s = best_time(lambda: update(loaded + [added]), 7, CPU)
        remove_s = best_time(lambda: update(loaded[1:]), 7, CPU)
        add, remove = update(loaded + [added]), update(loaded[1:])
        assert not add.rejected and not remove.rejected, (add.rejected, remove.rejected)
        stream_ms = spec.stream_bits / CLOCK_HZ * 1e3
        add_ms = len(add.delta()) * 8 / CLOCK_HZ * 1e3
        remove_ms = len(remove.delta()) * 8 / CLOCK_HZ * 1e3
        row = {
            "columns": columns,
            "clusters": clusters,
            "profiles_loaded": len(loaded),
            "columns_free": free,
            "added_profile": added,
            "stream_bits": spec.stream_bits,
            "stream_ms_at_100MHz": stream_ms,
            "document_wait_ms": wait_ms,
            "full_reload_generation_ms": full_s * 1e3,
            "full_reload_total_ms": full_s * 1e3 + stream_ms + wait_ms,
            "add_one_clusters_changed": len(add.changed),
            "add_one_delta_bits": len(add.delta()) * 8,
            "add_one_generation_ms": add_s * 1e3,
            "add_one_total_ms": add_s * 1e3 + add_ms + wait_ms,
            "add_one_goal_10ms_met": add_s * 1e3 + add_ms + wait_ms <= GOAL_MS,
            "remove_one_delta_bits": len(remove.delta()) * 8,
            "remove_one_total_ms": remove_s * 1e3 + remove_ms + wait_ms,
            "add_one_full_stream_total_ms": add_full_s * 1e3 + stream_ms + wait_ms,
        }
        rows.append(row)
        print(
            f"{columns:6} columns, {len(loaded):5} profiles: full reload "
            f"{row['full_reload_total_ms']:7.2f} ms; add one: delta of "
            f"{len(add.changed)} cluster(s), {row['add_one_total_ms']:6.2f} ms "
            f"(generation {add_s * 1e3:.2f}); remove one {row['remove_one_total_ms']:6.2f} ms; "
            f"add one by a full stream {row['add_one_full_stream_total_ms']:7.2f} ms",
            file=sys.stderr,
        )
    publish(
        "config_update",
        rows,
        [
            ("columns", "columns"),
            ("profiles_loaded", "profiles loaded"),
            ("columns_free", "columns free"),
            ("added_profile", "added profile"),
            ("stream_bits", "full stream bits"),
            ("stream_ms_at_100MHz", "full stream ms @100 MHz"),
            ("document_wait_ms", "document wait ms"),
            ("full_reload_generation_ms", "full reload: generation ms"),
            ("full_reload_total_ms", "full reload: total ms"),
            ("add_one_clusters_changed", "add one: clusters changed"),
            ("add_one_delta_bits", "add one: delta bits"),
            ("add_one_generation_ms", "add one: generation ms"),
            ("add_one_total_ms", "add one: total ms"),
            ("add_one_goal_10ms_met", "add one <= 10 ms"),
            ("remove_one_delta_bits", "remove one: delta bits"),
            ("remove_one_total_ms", "remove one: total ms"),
            ("add_one_full_stream_total_ms", "add one by a full stream: total ms"),
        ],
        "Programmable engine: time from a changed profile file to the new configuration",
        "Generation = parse the profile file + place + stream bytes (best of 7, CPU time of "
        "one core: the machine is shared); "
        "full reload: xpfilt.compiler.programmable.configure; add/remove one: "
        "xpfilt.compiler.programmable.reconfigure (`xpfilt configure --previous`), whose delta stream "
        "holds only the changed clusters (format 3). Stream = one bit per cycle at 100 MHz "
        "into the inactive banks; the commit waits for the document in flight (the longest "
        "NITF document at one byte per cycle is counted). Total = generation + stream + wait.",
    )


if __name__ == "__main__":
    main()
