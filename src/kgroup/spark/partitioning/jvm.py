"""kgroup's own JVM functions for Spark: partitioning without leaving the JVM.

``java/`` holds kgroup's Java sources, shipped in the package: ``KafkaPartition.java``, a Spark Java
UDF computing Kafka's keyed partition, and ``KeylessPartition.java`` with what it needs
(``KeylessProducer``, ``PythonRandom``, ``Blake2b``), placing keyless records as kgroup's Python
null-key strategies do (:func:`keyless_udf`). They are compiled into one jar **on this machine**, the
first time a kgroup Spark session starts, with the JDK Spark already needs (``javac`` from
``JAVA_HOME`` or ``PATH``) against the Spark jars that pyspark ships — nothing is downloaded. The jar
is cached under the user's cache directory, keyed by the sources and the Spark version, so later
sessions only add it (``spark.jars``).

A session kgroup did not start (a notebook's, ``spark-submit``'s, any ``SparkSession.builder``) gets
the function from :func:`register_function` (``kgroup.spark.register`` calls it, and so does every
partitioning call): it adds the cached jar to the running session (Spark SQL's ``ADD JAR``, which also
ships it to the executors) and registers the class as a Java UDF.

When there is no ``javac`` (a JRE only) or compiling fails, kgroup goes on without it: partitioning
then runs in the Python workers over Arrow (exact as well, only slower). The reason is kept in
:func:`jar_problem`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgroup.javatools import CompileFailed, JavaToolMissing, cache_root, compile_jar, find_java_tool

__all__ = [
    "FUNCTION_NAME",
    "JAVA_CLASS",
    "KEYLESS_JAVA_CLASS",
    "jar_problem",
    "keyless_udf",
    "kgroup_jar",
    "register_function",
]

#: the UDF's class, as Spark registers it
JAVA_CLASS = "kgroup.spark.KafkaPartition"
#: the keyless placement's class (a UDF built per call by :func:`keyless_udf`, not registered by name)
KEYLESS_JAVA_CLASS = "kgroup.spark.KeylessPartition"
#: the name kgroup's JVM function is registered under in a session
FUNCTION_NAME = "kgroup_kafka_partition"
_SOURCES = sorted((Path(__file__).parent / "java").glob("*.java"))
#: the pyspark jars javac needs: the UDF interfaces and ``functions`` (Spark SQL), ``TaskContext``
#: (Spark core), and the Scala library types ``functions.udf``'s signatures name
_CLASSPATH_JARS = ("spark-sql*.jar", "spark-core*.jar", "scala-library*.jar", "scala-reflect*.jar")

_state: dict[str, str | None] = {}


def jar_problem() -> str | None:
    """Why :func:`kgroup_jar` gave ``None`` (``None`` when it gave a jar or was not asked yet)."""
    return _state.get("problem")


def _cache_dir() -> Path:
    return cache_root() / "jvm"


def _spark_jars() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    return jars if jars.is_dir() else None


def _javac() -> str | None:
    try:
        return find_java_tool("javac")
    except JavaToolMissing:
        return None


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
    # the version is in the jars' names, so a new Spark compiles anew
    classpath = sorted(path for pattern in _CLASSPATH_JARS for path in jars.glob(pattern))
    for pattern in _CLASSPATH_JARS:
        if not any(path.match(pattern) for path in classpath):
            raise _NoJar(f"no {pattern} in {jars}")

    def javac() -> str:
        found = _javac()
        if found is None:
            raise _NoJar("no javac (a JDK) on JAVA_HOME or PATH")
        return found

    try:
        return str(compile_jar(_SOURCES, classpath, _cache_dir(), "kgroup-spark", javac=javac))
    except (CompileFailed, JavaToolMissing) as exc:
        raise _NoJar(str(exc)) from exc


def register_function(spark: Any) -> str | None:
    """Make kgroup's JVM function callable in ``spark`` as :data:`FUNCTION_NAME`.

    A session whose class path has the jar (every session kgroup starts: ``spark.jars``) registers
    it at once; any other running session first gets the jar added (``ADD JAR``: the driver's
    session class loader and, through the SparkContext, every executor). Returns ``None`` when the
    function is registered, else why it is not (no JDK, a session that refuses the jar): the
    caller then partitions in the Python workers.
    """
    if _register_class(spark) is None:
        return None
    problem = _add_jar(spark)
    return problem if problem is not None else _register_class(spark)


def _add_jar(spark: Any) -> str | None:
    """``ADD JAR`` kgroup's jar to ``spark``: the session's class loader on the driver (made the
    calling thread's context class loader) and, through the SparkContext, every executor. Returns
    why not, or ``None``."""
    jar = kgroup_jar()
    if jar is None:
        return jar_problem()
    literal = jar.replace("\\", "\\\\").replace("'", "\\'")
    try:
        spark.sql(f"ADD JAR '{literal}'")
    except Exception as exc:
        return f"the session did not take kgroup's jar {jar}: {_first_line(exc)}"
    return None


def _register_class(spark: Any) -> str | None:
    from pyspark.sql.types import IntegerType

    try:
        spark.udf.registerJavaFunction(FUNCTION_NAME, JAVA_CLASS, IntegerType())
    except Exception as exc:  # the class is not on the session's class path (yet)
        return f"the session cannot load {JAVA_CLASS}: {_first_line(exc)}"
    return None


def keyless_udf(
    spark: Any, strategy: str, seed: int, num_partitions: int, record_bytes: int, batch_size: int
) -> Any | None:
    """kgroup's JVM placement of keyless records for one partition count: a non-deterministic
    Spark UDF (the JVM's ``UserDefinedFunction``) of (key is null, the rows' partition index) to
    the partition, one :data:`KEYLESS_JAVA_CLASS` producer per Spark task — the Python path's
    placement. ``strategy`` is one of the four built-in null-key strategies (``adaptive``,
    ``uniform-sticky``, ``round-robin``, ``legacy-round-robin``). ``None`` when the driver cannot
    load the class (a session without kgroup's jar): the caller places keyless records in Python.
    Call it after :func:`register_function` succeeded.

    py4j loads classes with the calling thread's context class loader, which sees a jar added by
    ``ADD JAR`` only on the thread that ran it; so on another thread (a user's own session) the jar
    is added once more — Spark keeps one copy — to make it that thread's loader too."""
    for attempt in range(2):
        try:
            function = spark._jvm.kgroup.spark.KeylessPartition.udf
            return function(strategy, str(seed), num_partitions, record_bytes, batch_size)
        except (TypeError, AttributeError):  # py4j: no such class here (a JavaPackage, not callable)
            if attempt or _add_jar(spark) is not None:
                return None
    return None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
