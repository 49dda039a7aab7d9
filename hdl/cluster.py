"""One cluster of the custom engine: its registered copy of the byte stream, its front end
(parser, tag decoder, global stack) and its stack bank (§5.4).

A cluster is self-contained, so the engine's Verilog can be written one cluster per module (and
per file): each converts on its own, in parallel, and an unchanged cluster is not converted again.
Ports are flat bit vectors so that a Verilog instance of a cluster is easy to wire.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from xpfilt.compiler import Cluster

from .frontend import ByteLayout, ErrorFlags, FrontEnd
from .stacks import StackBank

__all__ = ["ClusterCore", "cluster_signature"]

ERROR_WIDTH = ErrorFlags.as_shape().size


def cluster_signature(n_queries: int) -> wiring.Signature:
    """The ports of a cluster with ``n_queries`` queries (see :class:`ClusterCore`)."""
    return wiring.Signature({
        "valid": In(1),
        "data": In(8),
        "last": In(1),
        "clear": In(1),
        "matches": Out(n_queries),
        "doc_end": Out(1),
        "errors": Out(ERROR_WIDTH),
    })


class ClusterCore(wiring.Component):
    """Ports: ``valid``/``data``/``last`` (the engine's accepted byte, registered here),
    ``clear`` (the readout captured the flags), ``matches`` (one flag per query of the cluster,
    including this cycle), ``doc_end`` and ``errors`` (the front end's end of document)."""

    def __init__(self, cluster: Cluster, *, max_depth: int, max_name: int):
        self.cluster, self.max_depth, self.max_name = cluster, max_depth, max_name
        super().__init__(cluster_signature(len(cluster.queries)))

    def elaborate(self, platform):
        m = Module()
        m.submodules.front_end = front_end = FrontEnd(
            self.cluster.tags, max_depth=self.max_depth, max_name=self.max_name)
        m.submodules.stacks = bank = StackBank(self.cluster, max_depth=self.max_depth)
        copy_valid = Signal()
        copy = Signal(ByteLayout)
        m.d.sync += [copy_valid.eq(self.valid), copy.data.eq(self.data), copy.last.eq(self.last)]
        m.d.comb += [
            front_end.bytes_in.valid.eq(copy_valid),
            front_end.bytes_in.payload.eq(copy),
            bank.events.eq(front_end.events),
            bank.clear.eq(self.clear),
            self.matches.eq(bank.matches),
            self.doc_end.eq(front_end.events.doc_end),
            self.errors.eq(front_end.events.errors),
        ]
        return m
