"""Cycle-accurate model of :class:`xpfilt.hdl.programmable.ProgrammableEngine`.

The frame (input copy, front end, flow control, capture, readout) is :class:`FrameModel`; this
module adds the configuration loader (header, payload routing, CRC-32, commit at a document
boundary) and the clusters of generic columns, each a Python integer with one bit per column.
The tag dictionary is modelled by name: the name the front end model reports on each push
gets the index the hardware's decoder gives it from the active bank's nibble rows (the OR of
the indices of the entries whose rows hold each of its bytes, then its end; kept per name until
the next commit), whose tag-matrix row each cluster takes, in the cycle the clusters register
the event (as they read the tag matrix with the decoder's index). The
decoder's stages and the distribution tree are a delay line between the front end and the
clusters (:func:`xpfilt.hwspec.contract.programmable_event_delay`). With readout groups a cluster's flags
hold, per group, its answer select's bit of each push's new row at the group's first column
(:meth:`_Cluster.answer`), compacted to one bit per group when the readout takes them.
"""

from __future__ import annotations

from typing import Optional, Sequence

from xpfilt.compiler.programmable import (
    CHECKED_HEADER_BITS,
    CRC_BITS,
    FLAG_BITS,
    HEADER_BITS,
    Configuration,
    HardwareSpec,
    dictionary_row,
    dictionary_rows,
    read_stream,
)
from xpfilt.hwspec.contract import CRC32_POLY, programmable_event_delay
from xpfilt.hwspec.readout import ReadoutKind
from xpfilt.hwspec.slots import SLOT_FLAG_BITS, chain_bits, decode_slots, slot_rows
from xpfilt.lang.xpath import Query
from xpfilt.model.custom import Beat, FrameModel, filter_with_model, readout_positions
from xpfilt.model.frontend import FrontEndModel

__all__ = [
    "ProgrammableModel",
    "ProgrammableModelEngine",
    "load_configuration",
    "preload_configuration",
]

HEADER, PAYLOAD, CRC, DRAIN, PAD, DICTIONARY = range(6)


class _Dictionary:
    def __init__(self, spec: HardwareSpec):
        self.rows = [[0] * spec.dictionary_rows for _ in range(2)]  # [bank][row] = tags bits
        self.indices: dict[bytes, int] = {}  # names looked up since the last commit
        self.bank = 0
        self.shift = 0
        self.present = 0  # the stream being loaded holds the dictionary
        # the comparator slots: rows (8 x slots bits) in two banks, flags staged then active
        self.slot_rows = [[0] * slot_rows(spec.max_tag_len) for _ in range(2)]
        self.slot_shift = self.slot_staged = self.slot_flags = 0

    def activate(self) -> None:
        """Commit (when present): flip the banks, copy the staged slot flags."""
        if self.present:
            self.present = 0
            self.bank ^= 1
            self.slot_flags = self.slot_staged
            self.indices = {}

    def links(self, spec: HardwareSpec) -> list:
        """The active comparator slots (None: a free slot)."""
        return decode_slots(
            self.slot_rows[self.bank], self.slot_flags, spec.slots, spec.max_tag_len
        )

    def index(self, spec: HardwareSpec, name: bytes) -> int:
        """The decoder's index for ``name``: the OR of the indices of the entries whose rows
        in the active bank hold each of its bytes and, when it is shorter than
        ``max_tag_len``, a zero byte after it (0: none; a longer name: 0)."""
        if name not in self.indices:
            rows, entries = self.rows[self.bank], (1 << spec.tags) - 1
            if len(name) > spec.max_tag_len:
                entries = 0
            for p, byte in enumerate(
                name[: spec.max_tag_len] + bytes(len(name) < spec.max_tag_len)
            ):
                entries &= (
                    rows[dictionary_row(p, False, byte >> 4)]
                    & rows[dictionary_row(p, True, byte & 15)]
                )
            index = 0
            for d in range(spec.tags):
                if entries >> d & 1:
                    index |= d + 1
            self.indices[name] = index
        return self.indices[name]


class _Cluster:
    def __init__(self, spec: HardwareSpec):
        n = spec.columns
        self.all = (1 << n) - 1
        self.matrix = [[0] * spec.matrix_rows for _ in range(2)]  # [bank][index] = n bits
        self.bank = 0
        self.shift = 0
        self.staged = 0
        self.present = 0  # the stream being loaded holds this cluster
        self.first = self.descendant = 0
        self.closes = self.anchor = 0  # the columns decided at the close, their anchors
        self.below = 0
        # (offset, the columns with that child, those whose child there is negated)
        self.children: list[tuple[int, int, int]] = []
        self.gated: list[int] = []  # per comparator slot: the columns it gates
        self.stack = [0]
        self.pending = [0]  # per open element: the closing columns that held below it
        self.flags = 0
        # readout groups (None: a flag per column): per answer select v, the columns whose
        # group selects them (v columns above the group's first: its flag's position here)
        group = spec.readout_group
        self.answers = (
            [sum(1 << g * group for g in range(n // group))] + [0] * (group - 1)
            if group > 1
            else None
        )

    def activate(self, spec: HardwareSpec) -> None:
        """Commit (when present): flip the banks, copy the staged flags."""
        if not self.present:
            return
        self.present = 0
        self.bank ^= 1
        flags = [0] * FLAG_BITS
        w = spec.column_flag_bits
        self.gated = [0] * spec.slots
        for j in range(spec.columns):
            for k in range(FLAG_BITS):
                flags[k] |= (self.staged >> (w * j + k) & 1) << j
            select = self.staged >> (w * j + FLAG_BITS) & ((1 << spec.select_bits) - 1)
            if 0 < select <= spec.slots:
                self.gated[select - 1] |= 1 << j
        self.first, self.descendant = flags
        self.closes = self.anchor = 0
        if spec.closing:
            for j in range(spec.columns):
                self.closes |= (self.staged >> (w * j + spec.closes_bit) & 1) << j
                self.anchor |= (self.staged >> (w * j + spec.closes_bit + 1) & 1) << j
        # a closing column after its anchor: fired by its name alone, checked at the close
        # (none without slots or split nodes)
        self.below = self.closes & ~self.anchor

        # a closing column's children: column k + 1 when that one is below; with split nodes
        # the columns its mask names among the next twig_width (and those it negates)
        def columns(bit):
            return sum((self.staged >> (w * j + bit) & 1) << j for j in range(spec.columns))

        self.children = (
            [(1, self.below >> 1, 0)]
            if not spec.twig_width
            else [
                (i + 1, columns(spec.children_bit + i), columns(spec.negated_bit + i))
                for i in range(spec.twig_width)
            ]
        )
        group, bits = spec.readout_group, spec.group_select_bits
        selects = self.staged >> (w * spec.columns)
        if group > 1:
            self.answers = [0] * group
            for g in range(spec.columns // group):
                v = selects >> (bits * g) & ((1 << bits) - 1)
                self.answers[v] |= 1 << (g * group + v)

    def answer(self, new: int) -> int:
        """Per readout group, its answer select's bit of ``new`` (at the group's first column)."""
        out = 0
        for v, columns in enumerate(self.answers):
            out |= (new & columns) >> v
        return out

    def take(self) -> int:
        """The readout bits of the flags (one per readout group), which are cleared."""
        flags, self.flags = self.flags, 0
        if self.answers is None:
            return flags
        group, out = len(self.answers), 0
        for g in range(self.all.bit_length() // group):
            out |= (flags >> (g * group) & 1) << g
        return out

    def passing(self, conds: int) -> int:
        """The columns whose comparator slot holds (or that have none) for a push's bits."""
        out = self.all
        for s, columns in enumerate(self.gated):
            if not conds >> s & 1:
                out &= ~columns
        return out

    def hit(self, index: int, root: bool) -> int:
        """The columns an element with tag ``index`` matches (``root``: at level 1): its row
        of the active tag matrix."""
        matrix = self.matrix[self.bank]
        return matrix[root * len(matrix) // 2 + index]


class ProgrammableModel(FrameModel):
    """Register-level model of ``ProgrammableEngine(spec)``.

    :meth:`step` takes the configuration port's inputs too; ``config_ready`` and
    ``status`` (generation, loaded, rejected, pending) show the loader's state."""

    def __init__(self, spec: HardwareSpec):
        self.spec = spec
        self.width = spec.readout_width
        self.readout_kind = ReadoutKind(spec.readout)
        self.front_end = FrontEndModel(
            (),
            max_depth=spec.max_depth,
            max_name=spec.max_name,
            report_names=True,
            slots=bool(spec.slots),
        )
        self._header_check = spec.header_check
        self.tree_depth = programmable_event_delay(spec.clusters)
        self.reset()

    def reset(self) -> None:
        super().reset()
        self.dictionary = _Dictionary(self.spec)
        self.front_end.load_conditions(())
        self.links: list = []  # the active comparator slots (their chains)
        self.clusters = [_Cluster(self.spec) for _ in range(self.spec.clusters)]
        self.hits = [0] * self.spec.clusters  # the decoders' registered results
        self.in_document = 0
        self.state = HEADER
        self.header = self.cfg_count = self.received = 0
        self.crc = 0xFFFFFFFF
        self.in_row = self.in_flags = self.payload_count = 0
        self.section = 0
        self.cluster = self.row = 0
        self.active_id = 0
        self.cfg_pending = self.generation = self.loaded = self.rejected = 0
        self.held: Optional[tuple[int, bool]] = None  # the loader's input register (bit, last)
        self.config_ready = True

    @property
    def status(self) -> dict:
        return {
            "generation": self.generation,
            "loaded": self.loaded,
            "rejected": self.rejected,
            "pending": self.cfg_pending,
        }

    # --- one cycle -------------------------------------------------------------------------

    def step(
        self,
        valid: bool = True,
        data: int = 0,
        last: bool = False,
        out_ready: bool = True,
        cfg_valid: bool = False,
        cfg_bit: int = 0,
        cfg_last: bool = False,
    ) -> tuple[bool, Optional[Beat]]:
        held = self.held
        cfg_ready = not (held and self.cfg_pending)
        commit = self.cfg_pending and not self.in_document and self.drained
        ready, beat = super().step(valid, data, last, out_ready)
        if valid and ready:
            self.in_document = int(not last)
        if held and not self.cfg_pending:  # the loader takes its input register's bit
            self.held = None
            self._config_bit(*held)
        if cfg_valid and cfg_ready:
            self.held = (int(cfg_bit), bool(cfg_last))
        if commit:
            self._commit()
            self.cfg_pending = 0
            self.loaded = 1
            self.active_id = self.header >> 120
            self.generation = (self.generation + 1) & 0xFF
        self.config_ready = cfg_ready
        return ready, beat

    def _commit(self) -> None:
        """Every present part switches to its loaded contents."""
        self.dictionary.activate()
        if self.spec.slots:
            self.links = self.dictionary.links(self.spec)
            self.front_end.load_conditions([l and l.condition for l in self.links])
        for c in self.clusters:
            c.activate(self.spec)

    def _hold(self) -> bool:
        closing = bool(self.held and self.held[1])  # a stream's last bit waits in the register
        return (bool(self.cfg_pending) or closing) and not self.in_document

    def _config_bit(self, bit: int, last: bool) -> None:
        spec = self.spec
        crc_next = (self.crc >> 1) ^ (CRC32_POLY if (self.crc ^ bit) & 1 else 0)
        state = self.state
        if state == HEADER:
            header_next = (self.header >> 1) | bit << (HEADER_BITS - 1)
            self.header, self.crc = header_next, crc_next
            count = self.cfg_count
            self.cfg_count = count + 1
            if count == 0:
                self.rejected = 0
                self.dictionary.present = 0
                for c in self.clusters:
                    c.present = 0
            if count == HEADER_BITS - 1:
                self.cfg_count = self.in_row = self.in_flags = self.payload_count = 0
                self.section, self.cluster, self.row = 0, 0, 0
                base = header_next >> 88 & 0xFFFFFFFF
                if (
                    header_next & ((1 << CHECKED_HEADER_BITS) - 1) != self._header_check
                    or base not in (0, self.active_id)
                    or last
                ):
                    self._reject(last)
                else:
                    self.state = DICTIONARY
            elif last:
                self.rejected, self.cfg_count, self.crc = 1, 0, 0xFFFFFFFF
        elif state == DICTIONARY:
            self.crc = crc_next
            self.payload_count += 1
            dictionary, width = self.dictionary, spec.tags
            if self.section == 0:
                if bit:
                    dictionary.present = 1
                    self.section = 1
                else:
                    self.state = PAYLOAD
            elif self.section == 1:
                if self._row_bit(dictionary, dictionary.rows, width, spec.dictionary_rows, bit):
                    self.section = 2 if spec.slots else 0
                    self.state = DICTIONARY if spec.slots else PAYLOAD
            elif self.section == 2:
                if self._row_bit(
                    dictionary,
                    dictionary.slot_rows,
                    8 * spec.slots,
                    slot_rows(spec.max_tag_len),
                    bit,
                    "slot_shift",
                ):
                    self.section = 3
            else:
                n_flags = SLOT_FLAG_BITS * spec.slots
                dictionary.slot_staged = dictionary.slot_staged >> 1 | bit << (n_flags - 1)
                self.in_flags += 1
                if self.in_flags == n_flags:
                    self.in_flags = 0
                    self.section = 0
                    self.state = PAYLOAD
            if last:
                self.rejected = 1
                self.state = HEADER
        elif state == PAYLOAD:
            self.crc = crc_next
            self.payload_count += 1
            cluster = self.clusters[self.cluster]
            n = spec.columns
            end_of_cluster = False
            if self.section == 0:
                if bit:
                    cluster.present = 1
                    self.section = 2
                else:
                    end_of_cluster = True
            elif self.section == 2:
                if self._row_bit(cluster, cluster.matrix, n, spec.matrix_rows, bit):
                    self.section = 3
            else:
                cluster.staged = (cluster.staged >> 1) | bit << (spec.cluster_flag_bits - 1)
                self.in_flags += 1
                if self.in_flags == spec.cluster_flag_bits:
                    self.in_flags = 0
                    end_of_cluster = True
            if end_of_cluster:
                self.section = 0
                if self.cluster == spec.clusters - 1:
                    self.cluster = 0
                    self.state = CRC if self.payload_count % 8 == 0 else PAD
                else:
                    self.cluster += 1
            if last:
                self.rejected = 1
                self.state = HEADER
        elif state == PAD:
            self.crc = crc_next
            self.payload_count += 1
            if self.payload_count % 8 == 0:
                self.state = CRC
            if last:
                self.rejected = 1
                self.state = HEADER
        elif state == CRC:
            received_next = (self.received >> 1) | bit << (CRC_BITS - 1)
            self.received = received_next
            count = self.cfg_count
            self.cfg_count = count + 1
            if count == CRC_BITS - 1:
                self.cfg_count = 0
                if (
                    last
                    and received_next == self.crc ^ 0xFFFFFFFF
                    and self.header >> 56 & 0xFFFFFFFF == self.payload_count
                ):
                    self.cfg_pending = 1
                    self.state = HEADER
                else:
                    self._reject(last)
            elif last:
                self.rejected, self.cfg_count = 1, 0
                self.state = HEADER
        elif last:  # DRAIN
            self.state = HEADER
        if last:
            self.crc = 0xFFFFFFFF

    def _row_bit(self, part, banks, width: int, rows: int, bit: int, shift: str = "shift") -> bool:
        """``bit`` enters ``part``'s row register (its attribute ``shift``, ``width`` bits); a
        complete row goes to row ``self.row`` of the inactive bank of ``banks``. True after the
        last of ``rows``."""
        value = (getattr(part, shift) >> 1) | bit << (width - 1)
        setattr(part, shift, value)
        self.in_row += 1
        if self.in_row < width:
            return False
        banks[part.bank ^ 1][self.row] = value
        self.in_row = 0
        self.row = (self.row + 1) % rows
        return self.row == 0

    def _reject(self, last: bool) -> None:
        self.rejected = 1
        self.state = HEADER if last else DRAIN

    # --- the clusters ----------------------------------------------------------------------

    def _stage(self, ev):
        if ev.push:  # each decoder registers its result with the cluster's copy of the event
            index = self.dictionary.index(self.spec, ev.name)
            self.hits = [c.hit(index, ev.level == 1) for c in self.clusters]
        return ev

    def _push(self, ev) -> None:
        chains = None
        for c, hit in zip(self.clusters, self.hits):  # a root-only first column: by the row
            top = c.stack[-1]
            source = c.first | (top << 1) & c.all
            if c.gated and chains is None:  # the chains' bits, once per push
                chains = chain_bits(self.links, ev.conds)
            diagonal = hit & (source | c.below) & (c.passing(chains) if c.gated else c.all)
            new = diagonal | (c.descendant & ~c.closes & top)
            if c.closes:
                c.pending.append(0)
            c.stack.append(new)
            # a readout column has no vertical move; a readout group's flag takes its answer
            # column's new row (the same there, one LUT fewer)
            c.flags |= diagonal & ~c.closes if c.answers is None else c.answer(new)

    def _close(self, ev) -> None:
        """The element on top closes: each closing column whose bit its row holds, whose chain
        holds on the pop's text bits and whose next column (when that one is below it; with
        split nodes each child) held below the element (a negated child: did not), holds; an anchor holding is a match, another column holding tells
        the parent, and so does one that held below it when its step is reached by '//'."""
        chains = None
        for c in self.clusters:
            if not c.closes:
                continue
            if chains is None:
                chains = chain_bits(self.links, ev.conds, "pop")
            mine = c.pending[-1]
            holds = c.stack[-1] & c.closes & c.passing(chains)
            for offset, columns, negated in c.children:  # every child held below the
                holds &= ~columns | (mine >> offset ^ negated)  # element (negated: nowhere)
            c.flags |= holds & c.anchor
            c.pending[-2] |= (holds | (mine & c.descendant << 1)) & c.below

    def _pop(self) -> None:
        for c in self.clusters:  # the front end never pops at level 0
            c.stack.pop()
            if c.closes:
                c.pending.pop()

    def _restart(self) -> None:
        for c in self.clusters:
            c.stack = [0]
            c.pending = [0]

    def _take_flags(self) -> int:
        flags = 0
        per = self.spec.columns // self.spec.readout_group
        for k, c in enumerate(self.clusters):
            flags |= c.take() << (k * per)
        return flags


def preload_configuration(model: ProgrammableModel, configuration: Configuration) -> None:
    """Put the model straight into the state that loading ``configuration.stream()`` with
    :func:`load_configuration` leaves (without spending a cycle per bit): for filtering runs
    that are not about loading. Tests check that both give the same state."""
    spec = model.spec
    stream = configuration.stream()
    contents = read_stream(spec, stream)
    n, flags = spec.columns, spec.cluster_flag_bits
    dictionary, payload = model.dictionary, contents.dictionary
    rows = dictionary.rows[dictionary.bank ^ 1]
    rows[:] = dictionary_rows(spec, payload)
    dictionary.shift = rows[-1]
    if spec.slots:
        payload >>= spec.tags * spec.dictionary_rows
        width = 8 * spec.slots
        for r in range(slot_rows(spec.max_tag_len)):
            dictionary.slot_rows[dictionary.bank ^ 1][r] = dictionary.slot_shift = payload & (
                (1 << width) - 1
            )
            payload >>= width
        dictionary.slot_staged = payload
    dictionary.present = 1
    for c, payload in zip(model.clusters, contents.payloads):
        for i in range(spec.matrix_rows):
            c.matrix[c.bank ^ 1][i] = c.shift = payload & ((1 << n) - 1)
            payload >>= n
        c.staged = payload & ((1 << flags) - 1)
        c.present = 1
    model._commit()
    model.generation = (model.generation + 1) & 0xFF
    model.loaded, model.rejected = 1, 0
    model.header = int.from_bytes(stream[: HEADER_BITS // 8], "little")
    model.received = int.from_bytes(stream[-CRC_BITS // 8 :], "little")
    model.payload_count = spec.payload_bits
    model.active_id = contents.new_id


def load_configuration(model: ProgrammableModel, stream: bytes) -> int:
    """Shift a configuration stream into the model (one bit per cycle, no documents) and run
    until it is committed or rejected; returns the cycles used."""
    bits = len(stream) * 8
    start = model.cycle
    i = 0
    while i < bits:
        ready_before = not (model.held and model.cfg_pending)
        model.step(
            False, cfg_valid=True, cfg_bit=stream[i // 8] >> (i % 8) & 1, cfg_last=i == bits - 1
        )
        i += ready_before
    while model.held or model.cfg_pending:
        model.step(False)
    return model.cycle - start


class ProgrammableModelEngine:
    """Filter engine backed by the programmable engine's model, configured for ``queries``."""

    def __init__(self, queries: Sequence[Query], spec: HardwareSpec):
        from xpfilt.compiler.programmable import configure

        self.queries = tuple(queries)
        self.configuration: Configuration = configure(self.queries, spec)
        self.model = ProgrammableModel(spec)
        preload_configuration(self.model, self.configuration)
        self._bits = readout_positions(
            ((where, number) for number, where in self.configuration.answers.items()), self.queries
        )

    def filter(self, document) -> frozenset[int]:
        return filter_with_model(self.model, document, self._bits)
