"""The board feature, whole: an engine on a real FPGA board behind a UART host link.

* :mod:`boards.platforms` -- the boards (amaranth-boards platforms, LEDs, UART) and their
  devices;
* :mod:`boards.protocol` -- the host link's frame format: the one definition the gateware and
  the host share;
* :mod:`boards.uart`, :mod:`boards.hostlink`, :mod:`boards.top` -- the gateware: UART, frame
  decoder/encoder, and the board core and top around an engine;
* :mod:`boards.build` -- ``xpfilt build``: designs, board files, the toolchain, reports;
* :mod:`boards.host` -- ``xpfilt host``: the host side of the link, a board as a filter engine;
* :mod:`boards.sim_server`, :mod:`boards.sim_tb` -- ``xpfilt sim-board``: the board core under
  cocotb + Verilator, its UART bridged to TCP;
* :mod:`boards.cli` -- the three commands.
"""

from .platforms import BOARDS, Board, get_board

__all__ = ["BOARDS", "Board", "get_board"]
