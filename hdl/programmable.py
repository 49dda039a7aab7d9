"""The programmable filtering engine (§5.3): generic columns, loaded by a configuration stream.

One front end without a built-in dictionary serves every cluster. Its name tap drives the
engine's programmable tag decoder (:class:`TagDecoder`: a tag dictionary of ``tags`` entries),
whose registered tag index goes to every cluster with the events. Per cluster: a tag matrix,
``columns`` generic columns in a chain and the custom engine's stack memory (one row per level,
:func:`xpfilt.hdl.stacks.level_stack`). The stream format and the meaning of each configuration
bit are in :mod:`xpfilt.compiler.programmable`.

The dictionary lives in block RAMs with two banks, as nibble rows (stream format 10,
:func:`xpfilt.compiler.programmable.dictionary_row`): per name position, a row per value of a byte's
high nibble and one per value of its low nibble, each with a bit per entry (that entry's byte
there has this nibble), so two reads at the name position and the name byte's nibbles give
every entry its byte comparison as the AND of two bits (a streaming CAM of ``tags`` entries,
a LUT3 per entry). At the end of a name the
decoder registers the tag index of the entry it equals (0: none), pipelined in
:data:`xpfilt.hwspec.contract.DECODER_STAGES` stages; the index and the events (delayed to match) reach
every cluster through a registered distribution tree (:func:`xpfilt.hdl.cluster.distribute`)
and the cluster's own copy. In each cluster the index reads a row of the *tag matrix* (a
synchronous memory, a block RAM on the ECP5, one bit per column), which gives every column its
tag match at once: no comparator per column, and one dictionary for all clusters. A
configuration stream writes the *inactive* banks of the parts it holds (its *present* parts:
the dictionary, clusters; a delta stream holds only those that change) row by row and their
column flags into staging shift registers; only when the header, base id, length and CRC-32
check out does ``commit`` flip the present parts' banks and copy their flags, all in the same
cycle, between two documents: after the last event of the document in progress has reached the
clusters, with the input held meanwhile (so the document whose first byte is accepted after the
stream's last bit is the first one the new configuration answers). A rejected stream changes
nothing.
"""

from types import SimpleNamespace

from amaranth.hdl import Array, Cat, ClockSignal, Const, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from xpfilt.compiler.programmable import (
    CHECKED_HEADER_BITS,
    CRC_BITS,
    FLAG_BITS,
    HEADER_BITS,
    HardwareSpec,
)
from xpfilt.hdl.bram import RegisteredRAM
from xpfilt.hdl.cluster import ERROR_WIDTH, copy_register, distribute
from xpfilt.hdl.custom import EngineFrame
from xpfilt.hdl.frontend import ByteLayout, NameTapLayout
from xpfilt.hdl.readout import readout_layout
from xpfilt.hdl.stacks import (
    DecodedEventLayout,
    RowAheadLayout,
    decode_events,
    level_stack,
    match_flags,
    pending_stack,
    row_ahead,
)
from xpfilt.hwspec.contract import (
    CRC32_POLY,
    EVENT_FANOUT,
    MATRIX_READ_CYCLES,
    distribution_depth,
    programmable_event_delay,
)
from xpfilt.hwspec.readout import ReadoutKind
from xpfilt.hwspec.slots import SLOT_FLAG_BITS, slot_rows

__all__ = [
    "ConfigBit",
    "ConfigStatus",
    "ConfigLoader",
    "TagDecoder",
    "ProgrammableCluster",
    "ProgrammableEngine",
    "CRC32_POLY",
    "CLUSTER_MODULE",
]

CLUSTER_MODULE = "xpfilt_prog_cluster"

#: Dictionary entries per memory of the tag decoder, each read from its own copy of the name
#: position and written from its own copy of the configuration port (one copy for all 127
#: entries, ECP5: 5.3 ns of routing from the position at 128 columns, 8.6 ns to the write
#: enables at 1,024).
DECODER_GROUP = 16

#: Groups of columns per cluster with closing columns (at most one per column), each with its
#: own registers of the next event's stack row and its own LUT-RAM
#: (:func:`xpfilt.hdl.stacks._row_register`).
STACK_READ_COPIES = 1


class ConfigBit(data.Struct):
    """One bit of a configuration stream; ``last`` on its final bit."""

    bit: 1
    last: 1


class ConfigStatus(data.Struct):
    """``generation`` counts committed configurations (wrapping); ``loaded``: one is active;
    ``rejected``: the last stream was refused; ``pending``: a checked stream waits for a
    document boundary."""

    generation: 8
    loaded: 1
    rejected: 1
    pending: 1


class _CfgPort(data.Struct):
    """What the loader tells every cluster in a cycle."""

    bit: 1
    start: 1  # the first bit of a stream: no cluster is present yet
    present: 1  # ``bit`` is the selected part's presence bit
    row_shift: 1  # ``bit`` enters the row register of the selected cluster
    row_write: 1  # ... and completes dictionary row ``row`` (written to the inactive bank)
    matrix_write: 1  # ... and completes tag-matrix row ``row`` (written to the inactive bank)
    flag_shift: 1  # ``bit`` enters the flag staging register of the selected cluster
    commit: 1  # switch every present part to its loaded contents
    slot_shift: 1  # ``bit`` enters the comparator slots' row register
    slot_row_write: 1  # ... and completes slot row ``row``
    slot_flag_shift: 1  # ``bit`` enters the slots' flag staging register


def _rows(spec: HardwareSpec) -> int:
    """Rows the loader counts in a section: dictionary rows, slot rows, tag-matrix rows."""
    return max(
        spec.dictionary_rows, spec.matrix_rows, slot_rows(spec.max_tag_len) if spec.slots else 1
    )


def _config_ports(spec: HardwareSpec) -> dict:
    """The ports a configured part takes from the :class:`ConfigLoader`: ``cfg``,
    ``selected`` (the payload bit belongs to this part) and ``row``."""
    return {"cfg": In(_CfgPort), "selected": In(1), "row": In(range(_rows(spec)))}


def _loader_port(spec: HardwareSpec) -> data.StructLayout:
    """What the :class:`ConfigLoader` sends towards the clusters, in one value."""
    return data.StructLayout(
        {
            "cfg": _CfgPort,
            "dictionary": 1,
            "cluster": range(spec.clusters),
            "row": range(_rows(spec)),
        }
    )


def _registered_config(m: Module, part, variant: int = 0, *, name: str = "cfg") -> tuple:
    """``part``'s ``cfg``, ``selected`` and ``row`` a cycle later, from registers of its own
    (the loader's decisions reach every part's wide enables from a register nearby), in form
    ``variant`` of :func:`xpfilt.hdl.cluster.copy_register` (a form k > 0 loads from the k-th
    cycle after reset on: the first bits of a stream are its header, which no part reads).
    Every part (the decoder's groups, each cluster: the engine registers their ports) takes
    the same delay, so the order of writes and commits is the loader's, and a commit still
    lands before the next document's first name or event."""
    cfg, selected, row = Signal.like(part.cfg), Signal(), Signal.like(part.row)
    m.d.comb += Cat(cfg, selected, row).eq(
        copy_register(m, Cat(part.cfg, part.selected, part.row), variant, name=name)
    )
    return cfg, selected, row


class ConfigLoader(wiring.Component):
    """Checks a configuration stream bit by bit and routes its payload to the clusters.

    Ports: ``config`` (the stream, into an input register: the loader checks and routes a bit
    the cycle after it is taken, :data:`xpfilt.hwspec.contract.CONFIG_INPUT_CYCLES`; not ready while that register holds a bit and a checked
    configuration waits to commit), ``idle`` (no document in progress: a commit may happen),
    ``cfg`` (to the decoder and every cluster), ``dictionary`` (the payload bit belongs to the
    dictionary), else ``cluster`` (the cluster it belongs to), ``row`` (its row),
    ``closing`` (the input register holds a stream's last bit: with ``status.pending``, the
    input of documents holds), ``status``.
    """

    def __init__(self, spec: HardwareSpec):
        self.spec = spec
        super().__init__(
            {
                "config": In(stream.Signature(ConfigBit)),
                "idle": In(1),
                "cfg": Out(_CfgPort),
                "dictionary": Out(1),
                "cluster": Out(range(spec.clusters)),
                "row": Out(range(_rows(spec))),
                "closing": Out(1),
                "status": Out(ConfigStatus),
            }
        )

    def elaborate(self, platform):
        m = Module()
        r = self._registers(m)
        inp = self._input_register(m, r)
        with m.FSM(name="config"):
            with m.State("HEADER"):
                self._header_state(m, r, inp)
            with m.State("DICTIONARY"):
                self._dictionary_state(m, r, inp)
            with m.State("PAYLOAD"):
                self._payload_state(m, r, inp)
            with m.State("PAD"):  # zero bits to a whole byte
                with m.If(inp.take):
                    m.d.sync += [r.crc.eq(inp.crc_next), r.payload_count.eq(r.payload_count + 1)]
                    with m.If(inp.whole_byte):
                        m.next = "CRC"
                    with m.If(inp.last):
                        m.d.sync += r.rejected.eq(1)
                        m.next = "HEADER"
            with m.State("CRC"):
                self._crc_state(m, r, inp)
            with m.State("DRAIN"):
                with m.If(inp.take & inp.last):
                    m.next = "HEADER"
            # every state but HEADER restarts the CRC for the next stream when it leaves
        with m.If(inp.take & inp.last):
            m.d.sync += r.crc.eq(r.crc.init)

        with m.If(r.pending & self.idle):
            m.d.comb += self.cfg.commit.eq(1)
            m.d.sync += [
                r.pending.eq(0),
                r.loaded.eq(1),
                r.generation.eq(r.generation + 1),
                r.active_id.eq(r.header[120:152]),
            ]
        return m

    def _registers(self, m) -> SimpleNamespace:
        """The loader's registers: the header and CRC as they shift in, the counts of the bits
        of the header (or the CRC), of the payload, of a row and of a cluster's flags, the
        ``section`` of the payload (dictionary: 0 presence, 1 rows, 2 slot rows, 3 slot flags;
        cluster: 0, 2 matrix, 3 flags), and the status."""
        spec = self.spec
        entry_bits = spec.tags
        flag_bits = spec.cluster_flag_bits
        slot_row_bits = 8 * spec.slots
        slot_flag_bits = SLOT_FLAG_BITS * spec.slots
        header = Signal(HEADER_BITS)
        crc = Signal(32, init=0xFFFFFFFF)
        received_crc = Signal(CRC_BITS)
        count = Signal(range(HEADER_BITS + 1))  # in the header or the CRC
        payload_count = Signal(range(spec.payload_bits + 1))  # payload bits so far
        in_row = Signal(range(max(entry_bits, spec.columns, slot_row_bits)))
        in_flags = Signal(range(max(flag_bits, slot_flag_bits)))
        # dictionary: 0 presence, 1 rows, 2 slot rows, 3 slot flags; cluster: 0, 2 matrix, 3 flags
        section = Signal(range(4))
        pending = Signal()
        generation = Signal(8)
        loaded = Signal()
        rejected = Signal()
        active_id = Signal(32)  # the id of the configuration in use (0: none yet)
        m.d.comb += [
            self.status.generation.eq(generation),
            self.status.loaded.eq(loaded),
            self.status.rejected.eq(rejected),
            self.status.pending.eq(pending),
        ]
        return SimpleNamespace(
            header=header,
            crc=crc,
            received_crc=received_crc,
            count=count,
            payload_count=payload_count,
            in_row=in_row,
            in_flags=in_flags,
            section=section,
            pending=pending,
            generation=generation,
            loaded=loaded,
            rejected=rejected,
            active_id=active_id,
        )

    def _input_register(self, m, r) -> SimpleNamespace:
        """The input register: ``take`` (the loader consumes its bit) and ``port.ready`` come
        from registers only (the host link's serializer is far from the loader at 4,096
        columns: 11.2 ns of routing from its bit counter to the loader's state, ECP5). Returns
        the bit, ``last``, ``take`` and what the bit makes of the CRC, the header and the
        received CRC."""
        port = self.config
        header, crc, received_crc, pending = r.header, r.crc, r.received_crc, r.pending
        held = Signal(ConfigBit)
        held_valid = Signal()
        take = held_valid & ~pending
        m.d.comb += [
            port.ready.eq(~(held_valid & pending)),
            self.closing.eq(held_valid & held.last),
        ]
        with m.If(port.valid & port.ready):
            m.d.sync += [held.eq(port.payload), held_valid.eq(1)]
        with m.Elif(take):
            m.d.sync += held_valid.eq(0)
        bit, last = held.bit, held.last
        crc_next = Signal(32)
        m.d.comb += crc_next.eq((crc >> 1) ^ Mux(crc[0] ^ bit, CRC32_POLY, 0))
        header_next = Cat(header[1:], bit)
        base_id = header_next[88:120]
        received_next = Cat(received_crc[1:], bit)
        final_crc = crc ^ 0xFFFFFFFF
        whole_byte = (r.payload_count + 1)[:3] == 0  # after this payload bit
        return SimpleNamespace(
            take=take,
            bit=bit,
            last=last,
            crc_next=crc_next,
            header_next=header_next,
            base_id=base_id,
            received_next=received_next,
            final_crc=final_crc,
            whole_byte=whole_byte,
        )

    @staticmethod
    def _reject(m, r, last) -> None:
        m.d.sync += r.rejected.eq(1)
        with m.If(last):
            m.next = "HEADER"
        with m.Else():
            m.next = "DRAIN"

    def _header_state(self, m, r, inp) -> None:
        """State HEADER: the header shifts in; checked at its last bit (the hardware it was
        made for, the configuration it is a delta of)."""
        spec, cfg = self.spec, self.cfg
        header, crc, count, rejected = r.header, r.crc, r.count, r.rejected
        take, last, header_next, base_id = inp.take, inp.last, inp.header_next, inp.base_id
        with m.If(take):
            m.d.sync += [header.eq(header_next), crc.eq(inp.crc_next), count.eq(count + 1)]
            with m.If(count == 0):
                m.d.comb += cfg.start.eq(1)
                m.d.sync += rejected.eq(0)
            with m.If(count == HEADER_BITS - 1):
                m.d.sync += [
                    count.eq(0),
                    r.in_row.eq(0),
                    r.in_flags.eq(0),
                    r.payload_count.eq(0),
                    r.section.eq(0),
                    self.cluster.eq(0),
                    self.row.eq(0),
                ]
                with m.If(
                    (header_next[:CHECKED_HEADER_BITS] != spec.header_check)
                    | ((base_id != 0) & (base_id != r.active_id))
                    | last
                ):
                    self._reject(m, r, last)
                with m.Else():
                    m.next = "DICTIONARY"
            with m.Elif(last):
                m.d.sync += [rejected.eq(1), count.eq(0), crc.eq(crc.init)]

    def _dictionary_state(self, m, r, inp) -> None:
        """State DICTIONARY: the dictionary's presence bit, its rows, the slots' rows and
        flags (:func:`_load_slots`)."""
        spec, cfg = self.spec, self.cfg
        section, in_row = r.section, r.in_row
        take, bit, last = inp.take, inp.bit, inp.last
        entry_bits = spec.tags
        m.d.comb += self.dictionary.eq(1)
        with m.If(take):
            m.d.sync += [r.crc.eq(inp.crc_next), r.payload_count.eq(r.payload_count + 1)]
            m.d.comb += cfg.bit.eq(bit)
            with m.If(section == 0):
                m.d.comb += cfg.present.eq(1)
                with m.If(bit):
                    m.d.sync += section.eq(1)
                with m.Else():
                    m.next = "PAYLOAD"
            with m.Elif(section == 1):
                m.d.comb += cfg.row_shift.eq(1)
                m.d.sync += in_row.eq(in_row + 1)
                with m.If(in_row == entry_bits - 1):
                    m.d.comb += cfg.row_write.eq(1)
                    m.d.sync += [in_row.eq(0), self.row.eq(self.row + 1)]
                    with m.If(self.row == spec.dictionary_rows - 1):
                        m.d.sync += self.row.eq(0)
                        if spec.slots:
                            m.d.sync += section.eq(2)
                        else:
                            m.d.sync += section.eq(0)
                            m.next = "PAYLOAD"
            if spec.slots:
                _load_slots(m, spec, cfg, section, in_row, r.in_flags, self.row)
            with m.If(last):  # truncated
                m.d.sync += r.rejected.eq(1)
                m.next = "HEADER"

    def _payload_state(self, m, r, inp) -> None:
        """State PAYLOAD: each cluster's presence bit, matrix rows and flags, cluster after
        cluster; then PAD (to a whole byte) or CRC."""
        spec, cfg = self.spec, self.cfg
        section, in_row, in_flags = r.section, r.in_row, r.in_flags
        take, bit, last = inp.take, inp.bit, inp.last
        flag_bits = spec.cluster_flag_bits
        with m.If(take):
            m.d.sync += [r.crc.eq(inp.crc_next), r.payload_count.eq(r.payload_count + 1)]
            m.d.comb += cfg.bit.eq(bit)
            end_of_cluster = Signal()
            with m.If(section == 0):
                m.d.comb += cfg.present.eq(1)
                with m.If(bit):
                    m.d.sync += section.eq(2)
                with m.Else():
                    m.d.comb += end_of_cluster.eq(1)
            with m.Elif(section == 2):
                m.d.comb += cfg.row_shift.eq(1)
                m.d.sync += in_row.eq(in_row + 1)
                with m.If(in_row == spec.columns - 1):
                    m.d.comb += cfg.matrix_write.eq(1)
                    m.d.sync += [in_row.eq(0), self.row.eq(self.row + 1)]
                    with m.If(self.row == spec.matrix_rows - 1):
                        m.d.sync += [section.eq(3), self.row.eq(0)]
            with m.Else():
                m.d.comb += cfg.flag_shift.eq(1)
                m.d.sync += in_flags.eq(in_flags + 1)
                with m.If(in_flags == flag_bits - 1):
                    m.d.sync += in_flags.eq(0)
                    m.d.comb += end_of_cluster.eq(1)
            with m.If(end_of_cluster):
                m.d.sync += [section.eq(0), self.cluster.eq(self.cluster + 1)]
                with m.If(self.cluster == spec.clusters - 1):
                    m.d.sync += self.cluster.eq(0)
                    with m.If(inp.whole_byte):
                        m.next = "CRC"
                    with m.Else():
                        m.next = "PAD"
            with m.If(last):  # truncated: no CRC (or less)
                m.d.sync += r.rejected.eq(1)
                m.next = "HEADER"

    def _crc_state(self, m, r, inp) -> None:
        """State CRC: the received CRC shifts in; at its last bit (the stream's last) the
        configuration is pending when the CRC and the payload length agree."""
        count, take, last = r.count, inp.take, inp.last
        with m.If(take):
            m.d.sync += [r.received_crc.eq(inp.received_next), count.eq(count + 1)]
            with m.If(count == CRC_BITS - 1):
                m.d.sync += count.eq(0)
                with m.If(
                    last
                    & (inp.received_next == inp.final_crc)
                    & (r.header[56:88] == r.payload_count)
                ):
                    m.d.sync += r.pending.eq(1)
                    m.next = "HEADER"
                with m.Else():
                    self._reject(m, r, last)
            with m.Elif(last):
                m.d.sync += [r.rejected.eq(1), count.eq(0)]
                m.next = "HEADER"


class TagDecoder(wiring.Component):
    """The engine's programmable tag decoder: follows each name on ``name_tap`` (the front
    end's) against the dictionary's entries and shows the index of the entry the name ending at
    a ``load`` equals (0: none) on ``index``, :data:`xpfilt.hwspec.contract.DECODER_STAGES` cycles after
    the tap (stages: copies of the tap, one per group of :data:`DECODER_GROUP` entries; the
    group's two nibble rows of the name byte at its position, block RAM reads; their output
    registers; per entry "the name so far equals the entry's start" and "the name ending here
    equals the entry", the AND of its two nibble bits with the first; the index).
    ``cfg``/``selected``/``row`` from the :class:`ConfigLoader` (``selected``: the payload bit
    belongs to the dictionary)."""

    def __init__(self, spec: HardwareSpec):
        self.spec = spec
        super().__init__(
            {
                "name_tap": In(NameTapLayout(max_name=spec.max_name)),
                "index": Out(spec.index_bits),
                "bank": Out(1),  # the active bank (the comparator slots follow it)
                "flip": Out(1),  # the banks flip (a commit with the dictionary present)
                **_config_ports(spec),
            }
        )

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        length, tags = spec.max_tag_len, spec.tags
        # The dictionary in block RAMs of two banks, per group of DECODER_GROUP entries one for
        # the high nibbles' rows and one for the low nibbles' (xpfilt.compiler.programmable.
        # dictionary_row), each group with its own copies of the configuration port and the
        # tap, its own active bank (flipped by every group at the same commit) and its part of
        # the register the dictionary rows come in through.
        # (the comparator slots, in the front end, load at the loader's timing and follow
        # ``bank``, which flips in the commit's cycle)
        bank = Signal()
        present = _commit_banks(m, self.cfg, self.selected, bank)
        m.d.comb += [self.bank.eq(bank), self.flip.eq(self.cfg.commit & present)]
        # positions 0 ... length - 1 from the stream; at ``length`` (just past the longest
        # entry) every entry's byte is 0: rows of nibble 0 all ones, fixed; past it (the name
        # is longer than any entry) rows all zero, fixed
        position_bits = (length + 1).bit_length()
        rows = 2 << (position_bits + 4)  # two banks of (position, nibble value) rows
        ends = [(bank << position_bits | length) << 4 for bank in (0, 1)]
        groups = [range(g, min(tags, g + DECODER_GROUP)) for g in range(0, tags, DECODER_GROUP)]
        shifts = [Signal(len(group), name=f"shift_{k}") for k, group in enumerate(groups)]
        tap = self.name_tap
        # the tap's position, past the entries: the position after the longest
        position = Signal(position_bits)
        m.d.comb += position.eq(Mux(tap.pos > length, length + 1, tap.pos))
        high, low = Signal(tags), Signal(tags)  # stage 3: each entry's nibble bits
        for k, group in enumerate(groups):
            cfg, selected, cfg_row = _registered_config(m, self, k + 1, name=f"cfg_{k}")
            group_bank = Signal(name=f"bank_{k}")
            _commit_banks(m, cfg, selected, group_bank)
            shift = shifts[k]
            shift_next = Cat(shift[1:], shifts[k + 1][0] if k + 1 < len(groups) else cfg.bit)
            with m.If(selected & cfg.row_shift):
                m.d.sync += shift.eq(shift_next)
            row = Signal(5 + position_bits, name=f"row_{k}")  # ``cfg_row`` widened:
            m.d.comb += row.eq(cfg_row)  # value, low, position
            # stage 1: the group's copy of the tap: the position and the byte to compare (the
            # name byte on ``advance``, else 0: the entry ends where the name does; a push is
            # never registered on a name byte)
            copy = copy_register(
                m, Cat(position, Mux(tap.advance, tap.data, 0)), k + 1, name=f"tap_{k}"
            )
            pos, byte = copy[:position_bits], copy[position_bits:]
            for is_low, nibble, bits in ((0, byte[4:], high), (1, byte[:4], low)):
                # stage 2: the group's row of this nibble at that position, a block RAM's read
                ones = (1 << len(group)) - 1
                # stage 3: the row from its output register (on the ECP5 the DP16KD's own:
                # without it the data shows 5.8 ns after the clock, hdl/bram.py)
                table = RegisteredRAM(
                    width=len(group),
                    depth=rows,
                    init=[ones if r in ends else 0 for r in range(rows)],
                    ram_style="block",
                )
                m.submodules[f"entries_{k}_{'low' if is_low else 'high'}"] = table
                read, write = table.read, table.write
                m.d.comb += [
                    write.addr.eq(Cat(row[:4], row[5:], ~group_bank)),
                    write.data.eq(shift_next),
                    write.en.eq(selected & cfg.row_write & (row[4] == is_low)),
                    read.addr.eq(Cat(nibble, pos, group_bank)),
                    bits[group.start : group.stop].eq(read.data),
                ]
        control = Signal(NameTapLayout(max_name=spec.max_name))  # stage 1 ...
        between = Signal.like(control)  # ... 2
        later = Signal.like(control)  # ... and 3
        m.d.sync += [control.eq(tap), between.eq(control), later.eq(between)]

        # stage 4: each entry follows the name byte by byte (a LUT3 per entry: the still
        # flags' restart and advance are a flip-flop's set and enable)
        still = Signal(tags, init=(1 << tags) - 1)  # the name so far equals the entry's start
        equal = Signal(tags)  # the name ending here equals the entry
        same = still & high & low
        loaded = Signal()
        m.d.sync += loaded.eq(later.load)
        with m.If(later.restart):
            m.d.sync += still.eq(still.init)
        with m.Elif(later.advance):
            m.d.sync += still.eq(same)
        with m.If(later.load):
            m.d.sync += equal.eq(same)
        # stage 5: the OR of the equal entries' indices (one, in a stream we write)
        with m.If(loaded):
            m.d.sync += self.index.eq(
                Cat(
                    *(
                        Cat(*(equal[d] for d in range(tags) if (d + 1) >> b & 1)).any()
                        for b in range(spec.index_bits)
                    )
                )
            )
        return m


def _load_slots(m, spec: HardwareSpec, cfg, section, in_row, in_flags, row) -> None:
    """The loader's DICTIONARY state after the tag rows: the comparator slots' rows (section
    2), then their flags (section 3), then on to the clusters (see :mod:`xpfilt.hwspec.slots`)."""
    with m.If(section == 2):
        m.d.comb += cfg.slot_shift.eq(1)
        m.d.sync += in_row.eq(in_row + 1)
        with m.If(in_row == 8 * spec.slots - 1):
            m.d.comb += cfg.slot_row_write.eq(1)
            m.d.sync += [in_row.eq(0), row.eq(row + 1)]
            with m.If(row == slot_rows(spec.max_tag_len) - 1):
                m.d.sync += [section.eq(3), row.eq(0)]
    with m.If(section == 3):
        m.d.comb += cfg.slot_flag_shift.eq(1)
        m.d.sync += in_flags.eq(in_flags + 1)
        with m.If(in_flags == SLOT_FLAG_BITS * spec.slots - 1):
            m.d.sync += [in_flags.eq(0), section.eq(0)]
            m.next = "PAYLOAD"


def _connect_slots(m, load, loader, decoder) -> None:
    """The front end's comparator slots load from the loader's DICTIONARY state and switch
    banks with the tag decoder."""
    cfg = loader.cfg
    m.d.comb += [
        load.bit.eq(cfg.bit),
        load.shift.eq(cfg.slot_shift),
        load.row_write.eq(cfg.slot_row_write),
        load.flag_shift.eq(cfg.slot_flag_shift),
        load.row.eq(loader.row),
        load.bank.eq(decoder.bank),
        load.flip.eq(decoder.flip),
    ]


def _commit_banks(m, cfg, selected, bank, *also, late=False):
    """A part's commit: ``present`` when the stream being loaded holds it (its presence bit);
    on ``commit``, a present part flips ``bank`` and performs the ``also`` assignments (with
    ``late``, a cycle after, from a register: a cluster's flags take it as their enable)."""
    present = Signal()
    with m.If(cfg.start):
        m.d.sync += present.eq(0)
    with m.Elif(selected & cfg.present & cfg.bit):
        m.d.sync += present.eq(1)
    with m.If(cfg.commit & present):
        m.d.sync += present.eq(0)
    flip = cfg.commit & present
    if late:
        flip = Signal(name="commit_late")
        m.d.sync += flip.eq(cfg.commit & present)
    with m.If(flip):
        m.d.sync += [bank.eq(~bank), *also]
    return present


def cluster_events(spec: HardwareSpec) -> DecodedEventLayout:
    """The events a cluster takes: the front end's, level decoded (no tags)."""
    return DecodedEventLayout(n_tags=0, max_depth=spec.max_depth, n_conds=spec.slots)


class ClosingAheadLayout(data.StructLayout):
    """What a cluster with closing columns gets ahead of its events: ``row``, the stack's read
    two cycles ahead (:class:`xpfilt.hdl.stacks.RowAheadLayout`), and ``clear``, a cycle
    ahead, the event is a push or a document's end (the pending bits' reset, from a register
    of the cluster's own:
    measured, events.push -> a LUT -> every pending bit's reset was the routed critical path
    of 1 x 128 with 8 slots, 94.6 MHz router2, RTL 8be2aa9dd618, 9.4 of 10.6 ns routing)."""

    def __init__(self, max_depth: int):
        super().__init__({"row": RowAheadLayout(max_depth), "clear": 1})


class ProgrammableCluster(wiring.Component):
    """One cluster of generic columns: ``events`` (the front end's, decoded by
    :func:`xpfilt.hdl.stacks.decode_events`) and ``index`` from the :class:`TagDecoder` with
    the element's level-1 bit above it (the tag matrix's row), both
    the cluster's own registered copies (the index ``MATRIX_READ_CYCLES`` ahead of the
    events; ``next_addr``: the stack's read address a cycle ahead, the events' ``addr``; with
    closing columns (slots, a twig width) instead ``row_ahead``, a
    :class:`ClosingAheadLayout` (the stack's read of the events' ``read_addr`` two cycles
    ahead: a pop reads the closing element's row, which the cluster registers per group of
    columns; the pending bits' reset a cycle ahead),
    ``clear``/``matches``/``doc_end``/``errors`` as
    :class:`xpfilt.hdl.cluster.ClusterCore`, and ``cfg``/``selected``/``row`` from the
    :class:`ConfigLoader` through registers of the cluster's own."""

    def __init__(self, spec: HardwareSpec):
        self.spec = spec
        super().__init__(self.signature_for(spec))

    @staticmethod
    def signature_for(spec: HardwareSpec) -> wiring.Signature:
        return wiring.Signature(
            {
                "events": In(cluster_events(spec)),
                "index": In(spec.index_bits + 1),  # the tag index; above it: level 1
                **(
                    {"row_ahead": In(ClosingAheadLayout(spec.max_depth))}
                    if spec.closing
                    else {"next_addr": In(range(max(2, spec.max_depth)))}
                ),  # next events.addr
                **({"next_conds": In(spec.slots)} if spec.slots else {}),  # ... and events.conds
                "clear": In(1),
                "matches": Out(spec.columns // spec.readout_group),
                "doc_end": Out(1),
                "errors": Out(ERROR_WIDTH),
                **_config_ports(spec),
            }
        )

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        n, index_bits = spec.columns, spec.index_bits
        ev = self.events
        m.d.comb += [self.doc_end.eq(ev.doc_end), self.errors.eq(ev.errors)]

        # --- configuration: the tag matrix in two banks (``bank`` is active, the other one is
        # loaded), flags staged then active ---
        bank = Signal()
        # two cycles from the index to its row: the block RAM's address and output registers
        # (DP16KDs with REGMODE OUTREG on the ECP5: hdl/bram.py) = MATRIX_READ_CYCLES
        m.submodules.matrix = matrix = RegisteredRAM(width=n, depth=2 * spec.matrix_rows)
        matrix_read, matrix_write = matrix.read, matrix.write
        shift = Signal(n)  # tag-matrix rows come in here
        shift_next = Cat(shift[1:], self.cfg.bit)
        w = spec.column_flag_bits
        staged = Signal(spec.cluster_flag_bits)
        active = Signal(spec.cluster_flag_bits)
        with m.If(self.selected & self.cfg.row_shift):
            m.d.sync += shift.eq(shift_next)
        with m.If(self.selected & self.cfg.flag_shift):
            m.d.sync += staged.eq(Cat(staged[1:], self.cfg.bit))
        row = Signal(index_bits + 1)  # ``self.row`` widened
        m.d.comb += [
            row.eq(self.row),
            matrix_write.addr.eq(Cat(row, ~bank)),
            matrix_write.data.eq(shift_next),
            matrix_write.en.eq(self.selected & self.cfg.matrix_write),
        ]
        # (a cycle after the commit: cluster_0.present -> the ~1,000 flags' enable was the
        # routed critical path of 1 x 128 with 8 slots, 99.2 MHz router2, RTL 280db976cfec;
        # the next document's first event comes many cycles after a commit)
        _commit_banks(m, self.cfg, self.selected, bank, active.eq(staged), late=True)

        def flag(k):
            return Cat(*(active[w * j + k] for j in range(n)))

        first, descendant = (flag(k) for k in range(FLAG_BITS))
        passing = _passing(m, spec, active, self.next_conds if spec.slots else None)

        # the tag matrix's row of the decoder's index and the element's level-1 bit: the
        # columns the pushed element matches (a first column of a '/' query: at the root
        # only). They come MATRIX_READ_CYCLES before the event, so the read lines up with it.
        # (The bank flips only between documents, with no name or push in flight.)
        m.d.comb += matrix_read.addr.eq(Cat(self.index, bank))
        hit = matrix_read.data

        # --- the chain of columns and its stack (one row per level, as the custom engine's) ---
        parent = Signal(n)  # the row of the pushed element's parent (a pop: its own)
        new = Signal(n)
        source = first | (parent << 1)[:n]
        # a match flag takes the diagonal move only: a query's readout column is never
        # followed by '//' (without the vertical term, the flag and the new row are a LUT each)
        diagonal = Signal(n)
        if not spec.closing:
            m.d.comb += [
                diagonal.eq(hit & source & passing),
                new.eq(diagonal | (descendant & parent)),
            ]
            level_stack(m, ev, parent, new, spec.max_depth, early_addr=self.next_addr)
            if spec.readout_group == 1:
                match_flags(m, ev, self.clear, diagonal, self.matches)
            else:
                # each group's answer column from a register a cycle after the push (a LUT6
                # per group; in the same cycle, ABC spread the new rows over ~3 LUTs per
                # column), which the flags show at once: the same flags every cycle
                picked, pushed = Signal(n // spec.readout_group), Signal()
                m.d.sync += [picked.eq(_answers(spec, active, new)), pushed.eq(ev.push)]
                flags = Signal.like(picked)
                late = Mux(pushed, picked, 0)
                m.d.comb += self.matches.eq(flags | late)
                m.d.sync += flags.eq(Mux(self.clear, 0, flags | late))
            return m
        # the closing columns: a below column fires by its name alone (source any) and none
        # moves vertically (its descendant flag is the next one's '//')
        closes, anchor = flag(spec.closes_bit), flag(spec.closes_bit + 1)
        below = closes & ~anchor
        m.d.comb += [
            diagonal.eq(hit & (source | below) & passing),
            new.eq(diagonal | (descendant & ~closes & parent)),
        ]
        ahead = [
            RowAheadLayout(spec.max_depth)(
                copy_register(m, self.row_ahead.row.as_value(), g, name=f"row_ahead_{g}")
            )
            for g in range(min(STACK_READ_COPIES, n))
        ]
        level_stack(m, ev, parent, new, spec.max_depth, rows=spec.max_depth + 1, ahead=ahead)
        # the pending bits' reset: the events' push or document end, a cycle ahead through a
        # register of the cluster's own
        clear_now = Signal(name="pending_clear")
        m.d.sync += clear_now.eq(self.row_ahead.clear)
        holds = _closing(
            m,
            spec,
            ev,
            parent,
            passing,
            closes,
            below,
            descendant,
            children_held(spec, active, below),
            clear_now,
        )
        match_flags(
            m,
            ev,
            self.clear,
            Mux(ev.push, diagonal & ~closes, 0) | Mux(ev.pop, holds & anchor, 0),
            self.matches,
            gated=False,
        )
        return m


def _answers(spec: HardwareSpec, active, new):
    """With readout groups, what their match flags take on a push: each group's answer
    select's column of ``new`` (its diagonal move: a readout column has no vertical one; a
    LUT6 per group of 4, where a flag per column took a LUT each)."""
    group, bits = spec.readout_group, spec.group_select_bits
    base = spec.column_flag_bits * spec.columns
    return Cat(
        *(
            Array(new[g * group + v] for v in range(group))[
                active[base + bits * g : base + bits * g + bits]
            ]
            for g in range(spec.columns // group)
        )
    )


def _closing(m, spec: HardwareSpec, ev, row, passing, closes, below, descendant, held, clear):
    """The closing columns on a pop (a text() step and the steps after it, see
    :func:`xpfilt.compiler.programmable.query_columns`), as the custom engine's twig entries
    (:mod:`xpfilt.hdl.stacks`): a pending bit per column and open element ("below this
    element, this column held"; the current element's in a register, its ancestors' in a
    LUT-RAM by level, saved on each push). Column ``k`` holds at the closing element when its
    ``row`` has ``k``, its chain holds on the pop's text bits (``passing``) and, when column
    ``k + 1`` is below it (with split nodes: each of its children), that one held below the
    element (``held(pending)``, :func:`children_held`); a below column holding sets
    the parent's pending bit, and passes the element's on when its step is reached by ``//``
    (the previous column's ``descendant``). Returns the columns that hold (anchors: a
    match)."""
    n = spec.columns
    pending = Signal(n)
    holds = row & closes & passing & held(pending)
    up = (holds | (pending & Cat(Const(0, 1), descendant[:-1]))) & below
    pending_stack(m, ev, pending, up, spec.max_depth, clear=clear)
    return holds


def children_held(spec: HardwareSpec, active, below):
    """A function of the pending bits (the closing element's): per column, whether every
    child of it held below the element. Without a twig width a column's child is column
    ``k + 1`` when that one is below; with one, the columns its children mask names among
    the next ``twig_width`` (an AND over their pending bits, each inverted where the column's
    negated mask says: the split nodes)."""
    n, width = spec.columns, spec.twig_width
    if not width:
        after = Cat(below[1:], Const(0, 1))  # column k: column k + 1 is below it
        return lambda pending: ~after | Cat(pending[1:], Const(0, 1))
    w = spec.column_flag_bits

    def held(pending):
        beyond = Cat(pending, Const(0, width))  # no column past the last: none held
        return Cat(
            *(
                Cat(
                    *(
                        ~active[w * j + spec.children_bit + i]
                        | (beyond[j + 1 + i] ^ active[w * j + spec.negated_bit + i])
                        for i in range(width)
                    )
                ).all()
                for j in range(n)
            )
        )

    return held


def _passing(m, spec: HardwareSpec, active, next_conds):
    """The columns whose comparator slot holds for the event's ``conds`` (all that have no
    slot: select 0): column ``j``'s select picks its slot's bit. A register, taken from the
    next event's ``conds`` (``next_conds``, a cycle ahead of the cluster's events), so the
    chain bits' fan-out to every column's select is a cycle of its own (it was in front of
    the new row: events.conds -> select -> stack write data, the critical path of 1 x 128
    with 8 slots at 85.8 MHz). Exact because the flags change only at a commit, with no event
    in the clusters."""
    n, w = spec.columns, spec.column_flag_bits
    if not spec.slots:
        return Const((1 << n) - 1, n)
    holds = Cat(Const(1, 1), next_conds)  # select 0: no predicate
    passing = Signal(n)
    m.d.sync += passing.eq(
        Cat(
            *(
                holds.bit_select(active[w * j + FLAG_BITS : w * j + spec.closes_bit], 1)
                for j in range(n)
            )
        )
    )
    return passing


class ProgrammableEngine(wiring.Component):
    """Ports: ``bytes_in`` and ``readout`` as the custom engine (one readout bit per column,
    cluster 0 first), ``config`` (the configuration stream, one bit per transfer) and
    ``config_status``."""

    def __init__(self, spec: HardwareSpec, *, instances: bool = False):
        """``instances``: instantiate the Verilog module :data:`CLUSTER_MODULE` (converted once
        from :class:`ProgrammableCluster`, every cluster is the same hardware) instead of
        elaborating each cluster inline."""
        self.spec = spec
        self.instances = instances
        layout = readout_layout(ReadoutKind(spec.readout), spec.readout_width)
        super().__init__(
            {
                "bytes_in": In(stream.Signature(ByteLayout)),
                "readout": Out(stream.Signature(layout)),
                "config": In(stream.Signature(ConfigBit)),
                "config_status": Out(ConfigStatus),
            }
        )

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        frame = EngineFrame(
            m,
            self.bytes_in,
            self.readout,
            width=spec.readout_width,
            segments=[spec.columns // spec.readout_group] * spec.clusters,
            tags=(),
            max_depth=spec.max_depth,
            max_name=spec.max_name,
            readout=ReadoutKind(spec.readout),
            slots=spec.slots,
            slot_name_len=spec.max_tag_len,
        )
        m.submodules.loader = loader = ConfigLoader(spec)
        wiring.connect(m, wiring.flipped(self.config), loader.config)
        m.d.comb += self.config_status.eq(loader.status)

        # A checked configuration commits between two documents: once the current document's
        # last byte is accepted, the input holds until its events have all reached the clusters.
        in_document = Signal()  # bytes of a document accepted, its last byte not yet
        with m.If(frame.accepted):
            m.d.sync += in_document.eq(~self.bytes_in.payload.last)
        m.d.comb += [
            loader.idle.eq(~in_document & frame.drained),
            frame.hold.eq((loader.status.pending | loader.closing) & ~in_document),
        ]

        # The loader's port from a register beside it, for the decoder and the clusters' tree
        # alike (the same delay for every part): at 1,024 columns on the ECP5 the placer put
        # the loader's row counter beside the decoder's groups that copy it, 31 tiles from the
        # state machine it feeds back to (bench/placed_paths.py: the worst paths, 78 MHz).
        loader_port = Signal(_loader_port(spec))
        m.d.sync += loader_port.eq(Cat(loader.cfg, loader.dictionary, loader.cluster, loader.row))
        m.submodules.decoder = decoder = TagDecoder(spec)
        m.d.comb += [
            decoder.name_tap.eq(frame.name_tap),
            decoder.cfg.eq(loader_port.cfg),
            decoder.selected.eq(loader_port.dictionary),
            decoder.row.eq(loader_port.row),
        ]
        if spec.slots:
            _connect_slots(m, frame.slot_load, loader, decoder)
        # The events wait for the decoder's later stages and the tag matrix's read, then both
        # reach every cluster through a distribution tree and the cluster's own copy (see
        # xpfilt.hwspec.contract.programmable_event_delay).
        # The index goes with the level-1 bit of its element (the event MATRIX_READ_CYCLES
        # behind it): together they select the tag matrix's row.
        events = decode_events(m, frame.events, 0, spec.max_depth, spec.slots)
        waits = programmable_event_delay(spec.clusters) - distribution_depth(spec.clusters)
        for k in range(waits):
            if k == waits - MATRIX_READ_CYCLES:
                index = Cat(decoder.index, events.level1)
            later = Signal.like(events, name=f"events_delay_{k}")
            m.d.sync += later.eq(events)
            following, events = events, later
        if spec.closing:  # the stack rows' compares from the events a cycle ahead
            ahead = Signal(ClosingAheadLayout(spec.max_depth))
            m.d.comb += [
                ahead.row.eq(row_ahead(m, events, following, spec.max_depth)),
                ahead.clear.eq(events.push | events.doc_end),
            ]
            aheads = distribute(m, ahead, spec.clusters, name="row_ahead")
        events = distribute(m, events, spec.clusters, name="events")
        indices = distribute(m, index, spec.clusters, name="index")
        # The loader's port reaches the clusters through a distribution tree too (its decisions
        # would otherwise drive a register in every cluster across the device); a commit still
        # lands long before the next document's first event (the events' tree is as deep, and
        # they come through the front end and the decoder first: tests/test_programmable's
        # first-document test still passed with 12 more registers here, not with 20).
        ports = distribute(m, loader_port, spec.clusters, name="loader")
        cores = []
        for k in range(spec.clusters):
            if self.instances:
                core = ProgrammableCluster.signature_for(spec).flip().create(path=(f"cluster_{k}",))
                m.submodules[f"cluster_{k}"] = Instance(
                    CLUSTER_MODULE,
                    i_clk=ClockSignal(),
                    i_rst=ResetSignal(),
                    i_events=core.events,
                    i_index=core.index,
                    **(
                        {"i_row_ahead": core.row_ahead}
                        if spec.closing
                        else {"i_next_addr": core.next_addr}
                    ),
                    **({"i_next_conds": core.next_conds} if spec.slots else {}),
                    i_clear=core.clear,
                    o_matches=core.matches,
                    o_doc_end=core.doc_end,
                    o_errors=core.errors,
                    i_cfg=core.cfg,
                    i_selected=core.selected,
                    i_row=core.row,
                )
            else:
                core = m.submodules[f"cluster_{k}"] = ProgrammableCluster(spec)
            # the configuration port from registers of the cluster's own (form k: none is
            # merged with another cluster's), after the loader's distribution tree
            port = _loader_port(spec)(ports[k])
            config = copy_register(
                m,
                Cat(port.cfg, ~port.dictionary & (port.cluster == k), port.row),
                k,
                name=f"cfg_{k}",
            )
            m.d.comb += [
                Cat(core.cfg, core.selected, core.row).eq(config),
                core.events.eq(copy_register(m, events[k], k % EVENT_FANOUT, name=f"events_{k}")),
                (
                    core.row_ahead.eq(aheads[k])
                    if spec.closing
                    else core.next_addr.eq(cluster_events(spec)(events[k]).addr)
                ),
                *(
                    [core.next_conds.eq(cluster_events(spec)(events[k]).conds)]
                    if spec.slots
                    else []
                ),
                core.index.eq(copy_register(m, indices[k], k % EVENT_FANOUT, name=f"index_{k}")),
            ]
            cores.append(core)
        # the readout's capture and loads from registers of their own: with slots, cluster 0's
        # clear register (which synthesis merges with the capture) was placed beside the
        # cluster's flags, 14 tiles from the readout (1 x 128 with 8 slots, router2, 95.4 MHz:
        # cluster_0__clear -> shadow_0's enable, 9.7 of 10.5 ns routing)
        frame.connect(cores, readout_registers=True)
        return m
