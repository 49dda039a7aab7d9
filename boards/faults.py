"""A fault-injecting UDP link: a relay between a host and a board (real or simulated) that drops,
duplicates, reorders, corrupts and truncates datagrams, each with its own probability and a
seeded random source, in both directions.

The host sends to the relay's port; the relay forwards to the board from a socket of its own
and sends what the board answers back to the address the host last sent from (so a restarted
host, on a new port, gets the board's datagrams, stale ones included). A corrupted datagram has
one byte changed (a bad UDP checksum or FCS the network did not catch); a truncated one loses
its end (a datagram cut short). ``xpfilt sim-board --faults`` puts one in front of the board.
"""

from __future__ import annotations

import random
import select
import socket
import threading
from dataclasses import dataclass, fields
from typing import Optional

__all__ = ["Faults", "FaultyLink"]


@dataclass(frozen=True)
class Faults:
    """Per datagram and direction, the probability of each fault (at most one is applied:
    drop, then duplicate, reorder, corrupt, truncate in that order of precedence)."""

    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    corrupt: float = 0.0
    truncate: float = 0.0

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if not 0 <= value <= 1:
                raise ValueError(f"{f.name} probability must be between 0 and 1, not {value!r}")
        if sum(getattr(self, f.name) for f in fields(self)) > 1:
            raise ValueError("fault probabilities must add up to at most 1, not more")

    @classmethod
    def parse(cls, text: str) -> "Faults":
        """``drop=0.03,reorder=0.02,...`` (names of the fields; the others 0)."""
        values = {}
        names = {f.name for f in fields(cls)}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, eq, value = part.partition("=")
            if name not in names or not eq:
                raise ValueError(
                    f"a fault must be NAME=PROBABILITY with NAME one of {', '.join(sorted(names))}, "
                    f"not {part!r}"
                )
            try:
                values[name] = float(value)
            except ValueError:
                raise ValueError(f"{name} probability must be a number, not {value!r}") from None
        return cls(**values)


class _Direction:
    def __init__(self, faults: Faults, rng: random.Random):
        self.faults, self.rng = faults, rng
        self.held: Optional[bytes] = None  # a datagram overtaken by the next one
        self.counts = dict.fromkeys(("passed", *(f.name for f in fields(Faults))), 0)

    def apply(self, raw: bytes) -> list[bytes]:
        f, r = self.faults, self.rng.random()
        out = []
        for name in ("drop", "duplicate", "reorder", "corrupt", "truncate"):
            p = getattr(f, name)
            if r < p:
                self.counts[name] += 1
                if name == "duplicate":
                    out = [raw, raw]
                elif name == "reorder":
                    held, self.held = self.held, raw
                    return [held] if held is not None else []
                elif name == "corrupt":
                    data = bytearray(raw)
                    at = self.rng.randrange(len(data))
                    data[at] ^= self.rng.randrange(1, 256)
                    out = [bytes(data)]
                elif name == "truncate":
                    out = [raw[: self.rng.randrange(len(raw))]]
                break
            r -= p
        else:
            self.counts["passed"] += 1
            out = [raw]
        if self.held is not None:  # the overtaken datagram follows the one that overtook it
            out.append(self.held)
            self.held = None
        return out


class FaultyLink:
    """A relay on ``host``:``port`` (0: a free one, :attr:`port`) to ``board`` (``(host, port)``), injecting
    ``faults`` (both directions, seeded). Runs in a thread: :meth:`start`, :meth:`stop`;
    ``counts`` says what happened to each direction's datagrams."""

    def __init__(
        self,
        board: tuple[str, int],
        faults: Faults,
        *,
        seed: int = 0,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.board = board
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind((host, port))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.connect(board)
        for s in (self.front, self.back):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)
        self.port = self.front.getsockname()[1]
        rng = random.Random(seed)
        self.to_board = _Direction(faults, random.Random(rng.random()))
        self.to_host = _Direction(faults, random.Random(rng.random()))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.peer = None
        self.enabled = True  # False: pass everything unchanged

    @property
    def counts(self) -> dict:
        return {"to_board": self.to_board.counts, "to_host": self.to_host.counts}

    def start(self) -> "FaultyLink":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.front.close()
        self.back.close()

    def __enter__(self) -> "FaultyLink":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            readable, _, _ = select.select([self.front, self.back], [], [], 0.01)
            for sock in readable:
                try:
                    raw, where = sock.recvfrom(65536)
                except OSError:  # ECONNREFUSED: the board is not there (yet)
                    continue
                if sock is self.front:
                    self.peer = where
                    out = self.to_board.apply(raw) if self.enabled else [raw]
                    for d in out:
                        self._send(self.back.send, d)
                elif self.peer is not None:
                    out = self.to_host.apply(raw) if self.enabled else [raw]
                    for d in out:
                        self._send(lambda d: self.front.sendto(d, self.peer), d)

    @staticmethod
    def _send(send, raw: bytes) -> None:
        try:
            send(raw)
        except OSError:
            pass
