"""kgroup's own JVM function for Spark: keyed partitioning without leaving the JVM.

``jvm/KafkaPartition.java`` (kgroup's source, shipped in the package) is a Spark Java UDF computing
Kafka's keyed partition. It is compiled **on this machine**, the first time a kgroup Spark session
starts, with the JDK Spark already needs (``javac`` from ``JAVA_HOME`` or ``PATH``) against the Spark
jars that pyspark ships — nothing is downloaded. The jar is cached under the user's cache directory,
keyed by the source and the Spark version, so later sessions only add it (``spark.jars``).

When there is no ``javac`` (a JRE only) or compiling fails, kgroup goes on without it: partitioning
then runs in the Python workers over Arrow (exact as well, only slower). The reason is kept in
:func:`jar_problem`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

__all__ = ["JAVA_CLASS", "jar_problem", "kgroup_jar"]

#: the UDF's class, as Spark registers it
JAVA_CLASS = "kgroup.spark.KafkaPartition"
_SOURCE = Path(__file__).parent / "jvm" / "KafkaPartition.java"
#: javac is a JVM start plus one small file: well under this on any machine
_COMPILE_TIMEOUT_S = 120

_state: dict[str, str | None] = {}


def jar_problem() -> str | None:
    """Why :func:`kgroup_jar` gave ``None`` (``None`` when it gave a jar or was not asked yet)."""
    return _state.get("problem")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kgroup" / "jvm"


def _spark_jars() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    return jars if jars.is_dir() else None


def _javac() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("javac")


def kgroup_jar() -> str | None:
    """The path of the compiled jar (compiling it now if this machine has not yet), or ``None``."""
    if "jar" in _state:
        return _state["jar"]
    jar: str | None = None
    try:
        jar = _build()
    except _NoJar as exc:
        _state["problem"] = str(exc)
    except OSError as exc:  # e.g. a read-only cache directory: go on without the JVM function
        _state["problem"] = f"could not write the jar: {exc}"
    _state["jar"] = jar
    return jar


class _NoJar(Exception):
    pass


def _build() -> str:
    jars = _spark_jars()
    if jars is None:
        raise _NoJar("pyspark's jars directory was not found")
    # the Spark SQL jars hold the UDF interfaces; the version is in their names
    classpath = sorted(jars.glob("spark-sql*.jar"))
    if not classpath:
        raise _NoJar(f"no spark-sql jar in {jars}")
    source = _SOURCE.read_bytes()
    digest = hashlib.sha256(source + "|".join(p.name for p in classpath).encode()).hexdigest()[:16]
    target = _cache_dir() / f"kgroup-spark-{digest}.jar"
    if target.is_file():
        return str(target)
    javac = _javac()
    if javac is None:
        raise _NoJar("no javac (a JDK) on JAVA_HOME or PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kgroup-javac-") as work:
        classes = Path(work) / "classes"
        command = [
            javac, "--release", "17", "-nowarn", "-encoding", "UTF-8",
            "-cp", os.pathsep.join(str(p) for p in classpath),
            "-d", str(classes), str(_SOURCE),
        ]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _NoJar(f"javac did not run: {exc}") from exc
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no output"])[0]
            raise _NoJar(f"javac failed: {last}")
        # a jar is a zip of the class files; written beside the target, then moved in one step so
        # two processes compiling at once never see half a jar
        partial = Path(work) / "kgroup-spark.jar"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        staged = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(partial, staged)
        os.replace(staged, target)
    return str(target)
