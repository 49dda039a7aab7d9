"""bench/capacity.py's build cache: a board build is reused only if the RTL and the board
sources it was built from are unchanged (a board change once reused a stale cached build)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import capacity  # noqa: E402


def _cached(work: Path, key: str) -> dict:
    name = f"{capacity.point_name('ulx3s-85f', 'programmable', None)}-128-pnr"
    (work / f"{name}-{key}.json").write_text(
        json.dumps({"name": name, "size": 128, "fmax_mhz": 1.0})
    )
    return capacity.run_build(
        work,
        "ulx3s-85f",
        "programmable",
        None,
        128,
        pnr=True,
        budget=capacity.Budget(0, cached_only=True),
    )


def test_a_build_of_other_board_sources_is_not_reused(tmp_path):
    # the RTL digest alone (the cache key before the board sources were in it)
    assert _cached(tmp_path, capacity.rtl_digest()).get("skipped")
    assert _cached(tmp_path, f"{capacity.rtl_digest()}-b000000000000").get("skipped")
    assert _cached(tmp_path, capacity.build_key())["fmax_mhz"] == 1.0


def test_the_build_key_covers_the_rtl_and_the_board_sources():
    from resources import board_source_digest, source_digest

    assert capacity.build_key() == f"{source_digest()}-b{board_source_digest()}"


def _row(columns, fmax, router="router1"):
    return {
        "board": "ulx3s-85f",
        "kind": "programmable",
        "depth": None,
        "readout": "serial",
        "clock_source": "PLL",
        "clock_mhz": 100.0,
        "router": router,
        "columns": columns,
        "fmax_mhz": fmax,
    }


def test_rows_of_sizes_asked_for_replace_only_the_saved_rows_of_those_sizes():
    """--sizes 1024 once replaced the saved 4,096-column row of the same point."""
    saved = [_row(4096, 95.2), _row(1024, 109.6), _row(128, 120.0, router="router2")]
    merged = capacity.merge_rows(saved, [_row(1024, 111.0)], by_size=True)
    assert sorted((r["columns"], r["fmax_mhz"]) for r in merged) == [
        (128, 120.0),
        (1024, 111.0),
        (4096, 95.2),
    ]
    # a search for the largest size replaces its point's row whatever the size
    merged = capacity.merge_rows(saved, [_row(2048, 100.0)], by_size=False)
    assert sorted((r["columns"], r["fmax_mhz"]) for r in merged) == [(128, 120.0), (2048, 100.0)]


def test_ethernet_points_take_a_w_and_the_engine_clock_is_told_apart():
    import ethernet_capacity as ec

    assert ec.parse_point("colorlight-5a75b:1024") == ("colorlight-5a75b", 1024, 1)
    assert ec.parse_point("colorlight-5a75b:1024:w2") == ("colorlight-5a75b", 1024, 2)
    # nextpnr's clock nets: the engine's own clock (W > 1) is neither the link's nor LiteEth's
    report = {
        "fit": {"luts": 1, "ffs": 2, "bram": 3},
        "pnr": {
            "utilization": {"TRELLIS_COMB": "10/100"},
            "clocks": {"$glbnet$bridge.link_clk": 90.0, "$glbnet$liteeth.por_clk": 51.0,
                       "$glbnet$eth_rgmii_0__rx_clk__io$TRELLIS_IO_IN": 130.0,
                       "$glbnet$core.clk": 70.0},
            "constraints": {"$glbnet$bridge.link_clk": 125, "$glbnet$liteeth.por_clk": 50,
                            "$glbnet$eth_rgmii_0__rx_clk__io$TRELLIS_IO_IN": 125,
                            "$glbnet$core.clk": 62.5},
        },
    }  # fmt: skip
    row = ec.from_report(report)
    assert (row["fmax_link_mhz"], row["fmax_eth_mhz"], row["fmax_rgmii_mhz"]) == (90, 51, 130)
    assert (row["fmax_engine_mhz"], row["fmax_mhz"]) == (70, 90)
    del report["pnr"]["clocks"]["$glbnet$core.clk"]  # W = 1: the engine on the link's clock
    assert ec.from_report(report)["fmax_engine_mhz"] == 90
