"""Profile updates on the programmable engine as a publish/subscribe user sees them (issue 16,
part 3): the time from a changed profile file to the new configuration active = generating the
configuration (parse, place, stream bytes) + shifting the stream in (one bit per cycle at the
engine's clock, 100 MHz; the commit waits for a document boundary, a document of the NITF set
takes ~3,900 cycles at 1 byte/cycle).

For 1,024 / 4,096 / 16,384 columns (clusters of 128, tags up to 16 bytes), loaded with generated
depth-8 NITF queries until no room is left: a full reload, and adding one profile to the loaded
set. The stream format has no delta records (every update is a full, CRC-checked stream into the
inactive bank), so adding one profile costs a full stream: the table says what that costs.
Saved to bench/results/config_update.{json,md}.
"""

from __future__ import annotations

import sys
import time

from common import best_time, publish

from xpfilt import workloads
from xpfilt.paths import shared_data
from xpfilt.programmable import HardwareSpec, configure
from xpfilt.xpath import load_queries

CLOCK_HZ = 100e6
SIZES = (8, 32, 128)          # clusters of 128 columns


def main() -> None:
    schema = workloads.DtdSchema.load(shared_data() / "nitf/nitf-2-5.dtd")
    texts = workloads.generate_queries(schema, workloads.QueryGenConfig(
        count=6000, max_depth=8, p_wildcard=0.15, p_descendant=0.15, seed=7))
    rows = []
    for clusters in SIZES:
        spec = HardwareSpec(clusters=clusters, columns=128, max_tag_len=16)
        columns = spec.clusters * spec.columns
        # the loaded set: the queries that fit, one more kept aside as the added profile
        placed = sorted(configure(load_queries(texts).queries, spec).readout_bit)
        loaded = [texts[n - 1] for n in placed[:-1]]
        added = texts[placed[-1] - 1]   # it fit with the others, so it fits again

        def generate(lines):
            return configure(load_queries(lines).queries, spec).stream()

        full_s = best_time(lambda: generate(loaded))
        add_s = best_time(lambda: generate(loaded + [added]))
        stream_s = spec.stream_bits / CLOCK_HZ
        row = {"columns": columns, "clusters": clusters, "profiles_loaded": len(loaded),
               "stream_bits": spec.stream_bits, "stream_ms_at_100MHz": stream_s * 1e3,
               "full_reload_generation_ms": full_s * 1e3,
               "full_reload_total_ms": (full_s + stream_s) * 1e3,
               "add_one_generation_ms": add_s * 1e3,
               "add_one_total_ms": (add_s + stream_s) * 1e3,
               "add_one_goal_10ms_met": (add_s + stream_s) * 1e3 <= 10.0}
        rows.append(row)
        print(f"{columns:6} columns, {len(loaded):5} profiles: stream {stream_s * 1e3:6.2f} ms "
              f"at 100 MHz, generation {full_s * 1e3:7.1f} ms (full) / {add_s * 1e3:7.1f} ms "
              f"(one added): {row['add_one_total_ms']:7.1f} ms to add one", file=sys.stderr)
    publish("config_update", rows, [
        ("columns", "columns"), ("profiles_loaded", "profiles loaded"),
        ("stream_bits", "stream bits"), ("stream_ms_at_100MHz", "stream ms @100 MHz"),
        ("full_reload_generation_ms", "full reload: generation ms"),
        ("full_reload_total_ms", "full reload: total ms"),
        ("add_one_generation_ms", "add one: generation ms"),
        ("add_one_total_ms", "add one: total ms"),
        ("add_one_goal_10ms_met", "add one <= 10 ms")],
        "Programmable engine: time from a changed profile file to the new configuration",
        "Generation = parse + place + stream bytes (xpfilt.programmable.configure, best of 3, "
        "one core); stream = one bit per cycle at 100 MHz into the inactive bank, committed at "
        "the next document boundary (not counted: under 40 us for NITF documents). No delta "
        "format: adding one profile regenerates and streams the whole configuration.")


if __name__ == "__main__":
    main()
