"""The custom engine's stack memory holds every row, the current one included: a cluster's only
flip-flops are its match flags (on the ECP5 the row register and its push/pop multiplexer cost
~1 flip-flop and ~2 LUTs per column, more than the LUT-RAM; issue 13, capacity)."""

import re

from amaranth.back import rtlil

from xpfilt.compiler import CompileOptions, compile_queries
from xpfilt.hdl.stacks import StackBank
from xpfilt.xpath import parse_query


def flip_flop_bits(component) -> int:
    text = rtlil.convert(component)
    return sum(int(width) for width in re.findall(
        r"cell \$\w*dff\w* \S+\n(?:\s+parameter \\\w+ .*\n)*?\s+parameter \\WIDTH (\d+)", text))


def test_a_stack_bank_keeps_no_row_register():
    texts = ["/a/b/c", "//b/c/d", "/a//c/b", "/*/b/*/a", "//c/a", "/a/b/c/a", "//a//a", "/b/a"]
    plan = compile_queries([parse_query(t, i + 1) for i, t in enumerate(texts)],
                           CompileOptions(max_depth=16))
    cluster = plan.clusters[0]
    assert len(cluster.columns) >= 4
    dut = StackBank(cluster, n_tags=len(plan.tags), max_depth=16)
    assert flip_flop_bits(dut) == len(cluster.queries)
