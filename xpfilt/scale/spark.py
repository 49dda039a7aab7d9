"""A Spark session for xpfilt's fan-out, set up so that workers can run the project's code.

:func:`spark_context` starts (or reuses) a ``SparkContext`` for ``master`` (``local[*]`` by
default, or the one ``spark-submit --master`` gave; any master URL -- ``spark://``, ``yarn``,
``k8s://`` -- is passed through unchanged),
with what this machine needs: ``SPARK_LOCAL_IP`` defaulting to 127.0.0.1 for local masters,
``PYSPARK_PYTHON`` defaulting to this interpreter (workers otherwise run ``python3`` from PATH
and cannot import the project), quiet logs and no console progress bar (xpfilt draws its own).
The project's packages (``xpfilt`` with ``xpfilt.hdl``, ``xpfilt.sim``, ``xpfilt.boards``) are zipped and shipped to the executors
with ``addPyFile``; their third-party dependencies must be on the executors already (see the
README: a packed virtual environment passed with ``--archives``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

__all__ = ["spark_context", "package_zip", "DEFAULT_MASTER"]

DEFAULT_MASTER = "local[*]"
#: The packages a worker imports, each zipped under its import path (``xpfilt.hdl`` lives in
#: ``hdl/``: see ``package-dir`` in pyproject.toml).
PACKAGES = ("xpfilt", "xpfilt.hdl", "xpfilt.sim", "xpfilt.boards")

#: Spark's own logging: errors only, and not the task failures xpfilt reports as rows itself.
LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{1}: %m%n
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.python.name = org.apache.spark.api.python
logger.python.level = off
"""


def _log_config() -> Path:
    path = Path(tempfile.gettempdir()) / "xpfilt-spark-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2:
        path.write_text(LOG4J2)
    return path


def package_zip(directory: Optional[Path] = None) -> Path:
    """A zip of the project's Python packages (sources only), for ``SparkContext.addPyFile``."""
    directory = Path(directory or tempfile.mkdtemp(prefix="xpfilt-spark-"))
    path = directory / "xpfilt-packages.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            folder = Path(importlib.util.find_spec(package).submodule_search_locations[0])
            prefix = Path(*package.split("."))
            for source in sorted(folder.rglob("*.py")):
                archive.write(source, (prefix / source.relative_to(folder)).as_posix())
    return path


def spark_context(
    master: Optional[str] = None, app_name: str = "xpfilt", parallelism: Optional[int] = None
):
    """The active ``SparkContext`` or a new one for ``master`` (see the module docstring).
    Raises ``RuntimeError`` naming the fix if PySpark is not installed."""
    try:
        from pyspark import SparkConf, SparkContext
    except ImportError:
        raise RuntimeError("PySpark is not installed: pip install -e '.[spark]'") from None
    conf = SparkConf()  # under spark-submit this already holds --master and --conf values
    master = master or conf.get("spark.master", DEFAULT_MASTER)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    try:  # the shipped zip does not sit beside ../shared: tell the workers where it is
        from xpfilt.paths import shared_dir

        os.environ.setdefault("XPFILT_SHARED", str(shared_dir()))
    except FileNotFoundError:
        pass
    conf = (
        conf.setMaster(master)
        .setIfMissing("spark.app.name", app_name)
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.ui.enabled", "false")
        .set("spark.python.worker.reuse", "true")
        # one design point per task: never retry a point (a failure is already a row)
        .set("spark.task.maxFailures", "1")
        .set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_log_config()}")
    )
    if "XPFILT_SHARED" in os.environ:
        conf.set("spark.executorEnv.XPFILT_SHARED", os.environ["XPFILT_SHARED"])
    if parallelism:
        conf.set("spark.default.parallelism", str(parallelism))
    context = SparkContext.getOrCreate(conf)
    context.setLogLevel("ERROR")
    if not getattr(context, "_xpfilt_shipped", False):
        context.addPyFile(str(package_zip()))
        context._xpfilt_shipped = True
    return context
