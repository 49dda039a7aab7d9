"""The board feature, whole: an engine on a real FPGA board behind a UART or Ethernet host link.

* :mod:`xpfilt.boards.platforms` -- the boards (amaranth-boards platforms, LEDs, UART) and their
  devices;
* :mod:`xpfilt.boards.protocol` -- the host link's frame format: the one definition the gateware and
  the host share;
* :mod:`xpfilt.boards.uart`, :mod:`xpfilt.boards.hostlink`, :mod:`xpfilt.boards.top` -- the gateware: UART, frame
  decoder/encoder, and the board core and top around an engine;
* :mod:`xpfilt.boards.build` -- ``xpfilt build``: designs, board files, the toolchain, reports;
* :mod:`xpfilt.boards.host` -- ``xpfilt host``: the host side of the link, a board as a filter engine;
* :mod:`xpfilt.boards.sim_server`, :mod:`xpfilt.boards.sim_tb` -- ``xpfilt sim-board``: the board core under
  cocotb + Verilator, its UART bridged to TCP;
* :mod:`xpfilt.boards.udp_link`, :mod:`xpfilt.boards.eth_top`, :mod:`xpfilt.boards.liteeth` --
  the Ethernet boards' gateware: the UDP protocol endpoint, the board core and top around it,
  LiteEth's generated core;
* :mod:`xpfilt.boards.udp_host`, :mod:`xpfilt.boards.udp_board`, :mod:`xpfilt.boards.faults` --
  the UDP link's host, the board endpoint's behavioural model, a fault-injecting relay;
* :mod:`xpfilt.boards.cli` -- the three commands.
"""

from xpfilt.boards.platforms import BOARDS, Board, get_board

__all__ = ["BOARDS", "Board", "get_board"]
