"""The board commands of ``xpfilt`` (registered by :class:`xpfilt.cli._Main`): ``build`` (a
bitstream: :mod:`xpfilt.boards.build`), ``host`` (filter on a board: :mod:`xpfilt.boards.host`) and
``sim-board`` (a simulated board behind a TCP port: :mod:`xpfilt.boards.sim_server`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from xpfilt.cli.options import (
    bytes_per_cycle_option,
    compile_options,
    document_paths,
    mode_option,
    options_from,
    read_hardware_queries,
    read_queries,
    refuse_wide_programmable,
    spec_from_options,
)
from xpfilt.compiler.custom import EngineMode, hardware_queries
from xpfilt.eda.synth import ToolError

__all__ = ["build_command", "host_command", "sim_board_command"]


def _board_design_options(fn):
    """What goes on a board: a custom engine for --queries, or a programmable one."""
    options = [
        click.option(
            "-q",
            "--queries",
            "queries_path",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="Custom: the query file the engine is generated for.",
        ),
        mode_option(
            show_default=True,
            help="custom: hardware for --queries; programmable: "
            "generic columns, loaded later with `xpfilt host --queries/--config`.",
        ),
        compile_options,
        bytes_per_cycle_option,
        click.option(
            "--max-name",
            type=click.IntRange(1),
            default=32,
            show_default=True,
            help="Longest element name the parser accepts (longer: error flag).",
        ),
        click.option(
            "--columns",
            type=click.IntRange(2),
            default=128,
            show_default=True,
            help="Programmable: generic columns per cluster (even).",
        ),
        click.option(
            "--clusters",
            type=click.IntRange(1),
            default=1,
            show_default=True,
            help="Programmable: number of clusters.",
        ),
        click.option(
            "--max-tag-len",
            type=click.IntRange(1),
            default=16,
            show_default=True,
            help="Programmable: longest tag a dictionary entry holds.",
        ),
        click.option(
            "--tags",
            type=click.IntRange(1),
            default=31,
            show_default=True,
            help="Programmable: distinct tags the loaded queries may name in all.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _board_design(family, queries_path, mode, max_name, columns, clusters, max_tag_len, kwargs):
    from xpfilt.boards.build import custom_design, programmable_design
    from xpfilt.compiler.custom import UnsupportedQueryError

    log = lambda message: click.echo(message, err=True)  # noqa: E731
    bytes_per_cycle = kwargs.pop("bytes_per_cycle")
    if mode is EngineMode.PROGRAMMABLE:
        refuse_wide_programmable(bytes_per_cycle)
        if queries_path:
            raise click.UsageError(
                "--mode programmable takes no --queries: load them on the "
                "board with `xpfilt host --queries`"
            )
        spec = spec_from_options(clusters, columns, max_tag_len, max_name, kwargs)
        return programmable_design(spec, family=family, log=log), False
    if not queries_path:
        raise click.UsageError("--mode custom needs --queries QUERIES")
    options = options_from(kwargs)
    queries, skipped = read_hardware_queries(queries_path, max_name)
    try:
        design = custom_design(
            queries, options, max_name=max_name, bytes_per_cycle=bytes_per_cycle, log=log
        )
        return design, skipped
    except (UnsupportedQueryError, ToolError) as exc:
        raise click.ClickException(str(exc))


@click.command("build")
@click.option(
    "--board",
    "board_name",
    required=True,
    metavar="NAME",
    help="icebreaker (iCE40UP5K), ulx3s-85f (ECP5-85F), ecpix5-85f (ECP5-85F, Ethernet), "
    "colorlight-5a75b (ECP5-25F, Ethernet) or arty-a7-35 (Xilinx: Vivado files only).",
)
@_board_design_options
@click.option(
    "--link",
    type=click.Choice(["uart", "ethernet"]),
    default=None,
    help="The host link: a UART, or Gigabit Ethernet (UDP, LiteEth) [default: the board's "
    "first: uart where it has a UART, else ethernet].",
)
@click.option(
    "--mac",
    default="02:58:50:46:49:4c",
    show_default=True,
    help="--link ethernet: the board's MAC address.",
)
@click.option(
    "--ip",
    "ip_address",
    default="192.168.1.50",
    show_default=True,
    help="--link ethernet: the board's IPv4 address.",
)
@click.option(
    "--udp-port",
    type=click.IntRange(1, 65535),
    default=4747,
    show_default=True,
    help="--link ethernet: the board's UDP port (the host sends from it too).",
)
@click.option(
    "--baud",
    type=click.IntRange(1),
    default=115_200,
    show_default=True,
    help="UART rate of the host link.",
)
@click.option(
    "--no-toolchain",
    is_flag=True,
    help="Only write the files (Verilog, constraints, build script); run no tools.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=1800,
    show_default=True,
    help="Seconds each tool (Yosys, nextpnr, pack) may run.",
)
@click.option("--seed", type=int, default=None, help="nextpnr placement seed.")
@click.option(
    "--clock-mhz",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Clock the engine (and a UART host link) at this frequency from a PLL (ECP5) and "
    "constrain place and route at it [default: the board's oscillator; --link ethernet: "
    "125 MHz / --bytes-per-cycle, the link's 125 MB/s].",
)
@click.option("-o", "--output-dir", required=True, type=click.Path(file_okay=False, path_type=Path))
def build_command(
    board_name,
    queries_path,
    mode,
    max_name,
    columns,
    clusters,
    max_tag_len,
    link,
    mac,
    ip_address,
    udp_port,
    baud,
    no_toolchain,
    timeout,
    seed,
    clock_mhz,
    output_dir,
    **kwargs,
):
    """Build a bitstream: the engine behind a UART or Ethernet host link on a board.

    Writes into OUTPUT_DIR: board.json and plan.json / hardware.json (for `xpfilt host
    --build`), xpfilt_engine.v and xpfilt_board.v, gateware/ (the platform's build files and
    the tools' logs), the bitstream (iCE40 xpfilt_board.bin, ECP5 xpfilt_board.bit; Xilinx:
    Vivado project and build script only, not run) and report.md / report.json (utilization,
    Fmax). A design that does not fit the device stops after synthesis, saying about how many
    queries would. Tools: YoWASP builds, or $YOSYS, $NEXTPNR_ICE40, $ICEPACK, $NEXTPNR_ECP5,
    $ECPPACK.
    """
    from xpfilt.boards.build import BuildConfig, board_link, build_board
    from xpfilt.boards.liteeth import parse_ip, parse_mac
    from xpfilt.boards.platforms import get_board

    try:
        board = get_board(board_name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--board")
    try:
        link = board_link(board, link)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--link")
    try:
        mac_value = parse_mac(mac)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--mac")
    try:
        ip_value = parse_ip(ip_address)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--ip")
    design, skipped = _board_design(
        board.family, queries_path, mode, max_name, columns, clusters, max_tag_len, kwargs
    )
    config = BuildConfig(
        board_name,
        output_dir,
        baud=baud,
        run_toolchain=not no_toolchain,
        timeout=timeout,
        seed=seed,
        clock_hz=clock_mhz * 1e6 if clock_mhz else None,
        link=link,
        mac=mac_value,
        ip=ip_value,
        udp_port=udp_port,
    )
    try:
        result = build_board(design, config, log=lambda message: click.echo(message, err=True))
    except ToolError as exc:
        raise click.ClickException(f"{board_name}: {exc} (report: {output_dir}/report.md)")
    click.echo(result.to_markdown())
    sys.exit(1 if skipped or result.meets_timing is False else 0)


@click.command("host")
@click.option(
    "--port",
    "url",
    help="A board on a UART: a serial device (/dev/ttyUSB1) or socket://HOST:PORT "
    "(`xpfilt sim-board`).",
)
@click.option(
    "--udp",
    "udp",
    metavar="HOST[:PORT]",
    help="A board on Ethernet (port 4747 unless given), or `xpfilt sim-board --link ethernet`.",
)
@click.option(
    "--source-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="--udp: the local UDP port to send from (0: any) [default: the board's port (a "
    "LiteEth board answers only that), any for a loopback address].",
)
@click.option(
    "--rto",
    type=click.FloatRange(0.001),
    default=0.05,
    show_default=True,
    help="--udp: seconds without an acknowledgement before sending again (a simulated "
    "board in Verilator is slow: 2).",
)
@click.option(
    "--window",
    type=click.IntRange(1),
    default=64,
    show_default=True,
    help="--udp: documents in flight ahead of their answers.",
)
@click.option(
    "--baud",
    type=click.IntRange(1),
    default=None,
    help="UART rate (default: the --build directory's, else 115200).",
)
@click.option(
    "--build",
    "build_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The directory `xpfilt build` wrote for the bitstream on the board: its "
    "plan.json says which query each readout bit is (custom), its hardware.json "
    "what --queries are configured for (programmable).",
)
@click.option(
    "-q",
    "--queries",
    "queries_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Custom: checked against the board's plan. Programmable: configured on the "
    "board before filtering.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Programmable: a configuration stream from `xpfilt configure` to load (its "
    "CONFIG.map.tsv must be beside it).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.1),
    default=10.0,
    show_default=True,
    help="Seconds of silence before the board counts as not answering.",
)
@click.option(
    "--fallback/--no-fallback",
    default=True,
    show_default=True,
    help="Answer every document the board flags (malformed, too deep, a name too long, a "
    "value or an entity reference it cannot decide), and every one the software's "
    "well-formedness check does not accept, in software, with the fast engine of `xpfilt "
    "filter`; --no-fallback reports the flagged ones only.",
)
@click.option(
    "-o",
    "--output",
    type=click.File("w"),
    default="-",
    help="Write the TSV here instead of standard output.",
)
@click.argument("documents", nargs=-1, required=True, type=click.Path(path_type=Path))
def host_command(
    url,
    udp,
    source_port,
    rto,
    window,
    baud,
    build_dir,
    queries_path,
    config_path,
    timeout,
    fallback,
    output,
    documents,
):
    """Filter DOCUMENTS on a board and print the TSV of `xpfilt filter`.

    Each document goes to the board (--port: in a UART frame, one at a time; --udp: in
    datagrams, --window documents ahead); its readout comes back and becomes query numbers
    (file name, tab, matching query numbers). A document the engine flags (malformed, too
    deep, a name too long, a value or an entity reference it cannot decide), or that the
    software's compiled scanner does not accept as well-formed (the board checks less than
    expat), is answered in software instead, with the fast engine of `xpfilt filter`, so the
    TSV is `xpfilt filter`'s (a malformed document is reported on standard error, and the exit code is 1,
    as there); at the end standard error says how many documents were answered in software
    and why. With --no-fallback they are reported on standard error, the others still
    answered, and the exit code is 1. --udp shows a progress bar on a terminal and ends with
    documents/s and MB/s on standard error. Examples with a simulated board:

    \b
      xpfilt build --board icebreaker -q Q.txt --no-toolchain -o b
      xpfilt sim-board --build b --port 0 &        # prints socket://127.0.0.1:PORT
      xpfilt host --port socket://127.0.0.1:PORT --build b -q Q.txt docs/
    \b
      xpfilt sim-board --link ethernet --model --build b --port 0 &   # prints udp://...
      xpfilt host --udp 127.0.0.1:PORT --build b -q Q.txt docs/
    """
    from xpfilt.boards.host import DEFAULT_BAUD, BoardDesign, BoardLink, open_board_engine
    from xpfilt.boards.protocol import LinkError
    from xpfilt.engines import filter_batch
    from xpfilt.software.results import format_tsv_line

    if (url is None) == (udp is None):
        raise click.UsageError("give the board's --port (UART) or its --udp HOST[:PORT], one")

    failed = False

    def warn(message):
        nonlocal failed
        click.echo(f"xpfilt: {message}", err=True)
        failed = True

    try:
        design = BoardDesign.load(build_dir) if build_dir else None
        queries = None
        if queries_path:
            queries, skipped = read_queries(
                queries_path, refuse=lambda qs: hardware_queries(qs, None)
            )
            failed |= skipped
        paths = document_paths(documents)

        def write(results):
            for result in results:
                if result.ok:
                    output.write(format_tsv_line(result.name, result.matches) + "\n")
                else:
                    warn(result.error)

        if udp is not None:
            results = _udp_results(
                udp,
                source_port,
                rto,
                design,
                queries,
                config_path,
                timeout,
                window,
                paths,
                warn,
                fallback,
            )
            write(results)
        else:
            rate = baud or (design.baud if design else DEFAULT_BAUD)
            with BoardLink.open(url, baud=rate, timeout=timeout) as link:
                engine = open_board_engine(
                    link,
                    design,
                    queries=queries,
                    config_path=config_path,
                    warn=lambda message: warn(f"{queries_path}: {message}"),
                    fallback=fallback,
                )
                write(filter_batch(engine, paths))
                _fallback_summary(engine)
    except LinkError as exc:
        raise click.ClickException(str(exc))
    output.flush()
    sys.exit(1 if failed else 0)


def _fallback_summary(engine) -> None:
    """Say on standard error how many documents ``engine`` answered in software, and why."""
    if engine.fallback is not None:
        click.echo(f"xpfilt host: {engine.fallback.summary()}", err=True)


def _udp_results(
    address, source, rto, design, queries, config_path, timeout, window, paths, warn, fallback
):
    """The results of ``paths`` from the board at ``address`` over UDP, with a progress bar
    (on a terminal) and the rates at the end."""
    import time

    from tqdm import tqdm

    from xpfilt.boards.host import open_board_engine
    from xpfilt.boards.udp_host import (
        UdpBoardEngine,
        UdpLink,
        default_source_port,
        parse_address,
    )

    try:
        where = parse_address(address)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--udp")
    if source is None:
        source = default_source_port(*where)
    with UdpLink(where, timeout=timeout, rto=rto, source_port=source) as link:
        engine = open_board_engine(
            link,
            design,
            queries=queries,
            config_path=config_path,
            warn=lambda message: warn(f"--queries: {message}"),
            engine_class=UdpBoardEngine,
            fallback=fallback,
        )
        click.echo(f"xpfilt host: board at {link.last_status.address}", err=True)
        start = time.monotonic()
        with tqdm(total=len(paths), unit="doc", disable=None, file=sys.stderr) as bar:
            yield from engine.filter_batch(paths, window=window, on_result=lambda _: bar.update())
        took = max(time.monotonic() - start, 1e-9)
        click.echo(
            f"xpfilt host: {engine.documents} documents, {engine.bytes / 1e6:.3f} MB in "
            f"{took:.2f} s: {engine.documents / took:.1f} documents/s, "
            f"{engine.bytes / took / 1e6:.3f} MB/s ({link.stats.resent_bytes} bytes sent again)",
            err=True,
        )
        _fallback_summary(engine)


@click.command("sim-board")
@click.option(
    "--build",
    "build_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Simulate the design of this `xpfilt build` directory.",
)
@click.option(
    "--board",
    "board_name",
    metavar="NAME",
    help="Without --build: generate the design for this board into -o DIR first "
    "(as `xpfilt build --no-toolchain`).",
)
@_board_design_options
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Without --build: where the design files go.",
)
@click.option(
    "--divider",
    type=click.IntRange(4),
    default=8,
    show_default=True,
    help="Clock cycles per UART bit in the simulation.",
)
@click.option(
    "--link",
    type=click.Choice(["uart", "ethernet"]),
    default="uart",
    show_default=True,
    help="uart: the UART bridged to a TCP port; ethernet: the UDP link on a UDP port.",
)
@click.option(
    "--model",
    is_flag=True,
    help="--link ethernet: the board's protocol endpoint in Python around the engine's "
    "cycle model (xpfilt.boards.udp_board) instead of the RTL with LiteEth in Verilator.",
)
@click.option(
    "--phy",
    type=click.Choice(["rgmii", "gmii"]),
    default="rgmii",
    show_default=True,
    help="--link ethernet (RTL): LiteEth's PHY in the simulation: rgmii, the board's ECP5 RGMII "
    "PHY (its DDR primitives modelled), or gmii, LiteEth's GMII PHY (8 bits a cycle).",
)
@click.option(
    "--faults",
    metavar="NAME=P,...",
    default="",
    help="--link ethernet: relay datagrams through a fault-injecting link: drop, duplicate, "
    "reorder, corrupt, truncate, each with its probability (e.g. drop=0.03,reorder=0.03).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="--faults: random seed.")
@click.option("--bind", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="TCP (uart) or UDP (ethernet) port (0: any free port; the chosen one is printed).",
)
@click.option(
    "--connections",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="End after this many connections (0: serve until stopped).",
)
@click.option(
    "--accept-timeout",
    type=click.FloatRange(1),
    default=600,
    show_default=True,
    help="End when no client connects for this many seconds.",
)
@click.option(
    "--sim-build-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where simulator builds are cached (default: build/sim, or $XPFILT_SIM_BUILD).",
)
def sim_board_command(
    build_dir,
    board_name,
    queries_path,
    mode,
    max_name,
    columns,
    clusters,
    max_tag_len,
    output_dir,
    divider,
    link,
    model,
    phy,
    faults,
    seed,
    bind,
    port,
    connections,
    accept_timeout,
    sim_build_dir,
    **kwargs,
):
    """Run a board in simulation (cocotb + Verilator) behind a TCP or UDP port.

    The board core (UART, host link, engine) of --build DIR, or of a design generated like
    `xpfilt build --board NAME ... --no-toolchain -o DIR`, is simulated; its UART pins are
    bridged to a TCP socket, so `xpfilt host --port socket://HOST:PORT --build DIR` talks to it
    as to a board. Prints "listening on socket://HOST:PORT" when ready.

    --link ethernet: the Ethernet board core (UDP endpoint, engine) with LiteEth's MAC, ARP, IP
    and UDP cores and the board's RGMII PHY (--phy; see docs/boards-ethernet.md), its PHY pins
    driven by cocotbext-eth and bridged to a UDP socket ("listening on udp://HOST:PORT"), for
    `xpfilt host --udp HOST:PORT --rto 2`; --model serves the endpoint's Python model instead; --faults puts
    a fault-injecting relay in front.
    """
    from xpfilt.boards.build import BuildConfig, build_board
    from xpfilt.boards.sim_server import SimBoardConfig, serve_board

    if link == "uart" and (model or faults):
        raise click.UsageError("--model and --faults need --link ethernet")
    try:  # say now, not after building the simulation, that the address cannot be used
        import socket

        if link == "ethernet":
            probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            probe.bind((bind, port))
            probe.close()
        else:
            socket.create_server((bind, port)).close()
    except OSError as exc:
        raise click.ClickException(f"--bind {bind} --port {port}: {exc.strerror or exc}")
    if build_dir is None:
        if not board_name or not output_dir:
            raise click.UsageError(
                "give --build DIR, or --board NAME, the design options and -o DIR"
            )
        # simulated: the generic form of the block RAMs (family None)
        design, _ = _board_design(
            None, queries_path, mode, max_name, columns, clusters, max_tag_len, kwargs
        )
        try:
            build_board(design, BuildConfig(board_name, output_dir, run_toolchain=False))
        except (ToolError, ValueError) as exc:
            raise click.ClickException(str(exc))
        build_dir = output_dir
    elif board_name or queries_path:
        raise click.UsageError("--build DIR already names the design: drop --board/--queries")

    if link == "ethernet" and model:
        _serve_model(build_dir, bind, port, faults, seed, accept_timeout)
        return
    if link == "ethernet":
        _serve_ethernet_rtl(build_dir, bind, port, faults, seed, accept_timeout, sim_build_dir, phy)
        return

    def announce(chosen):
        click.echo(f"xpfilt sim-board: listening on socket://{bind}:{chosen}", nl=True)
        sys.stdout.flush()
        click.echo(
            f"connect with: xpfilt host --port socket://{bind}:{chosen} --build {build_dir} DOC...",
            err=True,
        )

    config = SimBoardConfig(
        build_dir,
        divider=divider,
        host=bind,
        port=port,
        connections=connections,
        accept_timeout=accept_timeout,
        build_root=sim_build_dir,
    )
    try:
        run = serve_board(config, on_port=announce, log=lambda m: click.echo(m, err=True))
    except (ToolError, RuntimeError) as exc:
        raise click.ClickException(str(exc))
    click.echo(
        f"xpfilt sim-board: simulation ended ({run.wall_time:.1f} s; log {run.log})", err=True
    )
    sys.exit(0 if run.passed else 1)


def _serve_model(build_dir, bind, port, faults, seed, idle_timeout):
    """``sim-board --link ethernet --model``: the endpoint model on a UDP port, maybe behind a
    fault-injecting relay."""
    import threading

    from xpfilt.boards.faults import Faults, FaultyLink
    from xpfilt.boards.udp_board import model_endpoint, serve_endpoint

    try:
        injected = Faults.parse(faults)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--faults")
    try:
        endpoint = model_endpoint(build_dir)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc))
    ports = []
    stop = threading.Event()
    server = threading.Thread(
        target=serve_endpoint,
        args=(endpoint,),
        kwargs=dict(
            host=bind,
            port=0 if faults else port,
            on_port=ports.append,
            stop=stop,
            idle_timeout=idle_timeout,
        ),
        daemon=True,
    )
    server.start()
    while not ports and server.is_alive():
        server.join(0.01)
    relay = None
    if faults:
        relay = FaultyLink((bind, ports[0]), injected, seed=seed, host=bind, port=port).start()
        ports = [relay.port]
    click.echo(f"xpfilt sim-board: listening on udp://{bind}:{ports[0]}")
    sys.stdout.flush()
    click.echo(
        f"connect with: xpfilt host --udp {bind}:{ports[0]} --build {build_dir} DOC...", err=True
    )
    try:
        server.join()
    except KeyboardInterrupt:
        stop.set()
        server.join()
    finally:
        if relay is not None:
            relay.stop()
            click.echo(f"xpfilt sim-board: faults injected: {relay.counts}", err=True)
    status = endpoint.status()
    click.echo(
        f"xpfilt sim-board: no datagram for {idle_timeout:g} s: ended ({status.documents} "
        f"documents; dropped {status.bad} bad, {status.stale} stale, {status.duplicates} "
        f"duplicate, {status.out_of_order} out-of-order datagrams)",
        err=True,
    )


def _serve_ethernet_rtl(build_dir, bind, port, faults, seed, idle_timeout, sim_build_dir, phy):
    """``sim-board --link ethernet``: the board core with LiteEth in Verilator, its PHY pins
    bridged to a UDP port (maybe behind a fault-injecting relay)."""
    from xpfilt.boards.faults import Faults, FaultyLink
    from xpfilt.boards.sim_server import EthernetSimConfig, serve_ethernet_board

    try:
        injected = Faults.parse(faults)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--faults")
    relays = []

    def announce(chosen):
        if faults:
            relays.append(
                FaultyLink((bind, chosen), injected, seed=seed, host=bind, port=port).start()
            )
            chosen = relays[0].port
        click.echo(f"xpfilt sim-board: listening on udp://{bind}:{chosen}")
        sys.stdout.flush()
        click.echo(
            f"connect with: xpfilt host --udp {bind}:{chosen} --rto 2 --build {build_dir} DOC...",
            err=True,
        )

    config = EthernetSimConfig(
        build_dir, host=bind, port=0 if faults else port, idle_timeout=idle_timeout,
        build_root=sim_build_dir, phy=phy,
    )  # fmt: skip
    try:
        run = serve_ethernet_board(config, on_port=announce, log=lambda m: click.echo(m, err=True))
    except (ToolError, RuntimeError) as exc:
        raise click.ClickException(str(exc))
    finally:
        for relay in relays:
            relay.stop()
            click.echo(f"xpfilt sim-board: faults injected: {relay.counts}", err=True)
    click.echo(
        f"xpfilt sim-board: simulation ended ({run.wall_time:.1f} s; log {run.log})", err=True
    )
    sys.exit(0 if run.passed else 1)
