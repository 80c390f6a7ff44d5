"""The JDK as a tool: find ``java``/``javac`` and compile kgroup's own Java sources into a cached jar.

Two parts of kgroup compile small Java programs on the user's machine with the JDK that Spark and
Apache Kafka need anyway: Spark's partitioning UDF (:mod:`kgroup.spark.partitioning.jvm`) and the harness that
drives Apache Kafka's own client and assignors in tests (:mod:`kgroup.testing.apache_kafka`). Both
go through :func:`compile_jar`: the jar is keyed by the sources and the classpath's file names, built
in a temporary directory and moved into the cache in one step, so two processes compiling at once
never see half a jar.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = [
    "CompileFailed",
    "JavaToolMissing",
    "MavenFailed",
    "cache_root",
    "compile_jar",
    "find_java_tool",
    "maven_copy_dependencies",
]

#: the plugin that copies a project's runtime dependencies into a folder
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

#: javac is a JVM start plus a few small files: well under this on any machine
COMPILE_TIMEOUT_S = 180


class JavaToolMissing(Exception):
    """No such JDK tool on ``JAVA_HOME`` or ``PATH``."""


class CompileFailed(Exception):
    """javac did not run, or refused the sources (the message is javac's first line)."""


def cache_root() -> Path:
    """kgroup's cache directory (``$XDG_CACHE_HOME/kgroup``, else ``~/.cache/kgroup``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kgroup"


def class_data_archive(name: str, java: str, classpath: str) -> Path:
    """Where a JVM's class-data-sharing archive lives, keyed by the ``java`` and the class path it is
    made with (a JVM ignores an archive that does not match them): ``<cache>/java/<name>-<key>.jsa``."""
    key = hashlib.sha256(f"{java}|{classpath}".encode()).hexdigest()[:16]
    return cache_root() / "java" / f"{name}-{key}.jsa"


def find_java_tool(name: str) -> str:
    """The path of JDK tool ``name`` (``java``, ``javac``): ``$JAVA_HOME/bin`` first, then ``PATH``."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise JavaToolMissing(
            f"no {name} on JAVA_HOME or PATH: install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless)"
        )
    return found


def _default_javac() -> str:
    return find_java_tool("javac")


def compile_jar(
    sources: Sequence[Path],
    classpath: Sequence[Path],
    target_dir: Path,
    name: str,
    javac: Callable[[], str] = _default_javac,
) -> Path:
    """Compile ``sources`` against ``classpath`` into ``target_dir/<name>-<digest>.jar`` (cached).

    ``javac`` is asked for only when the jar is not cached yet (a JRE-only machine still uses a jar
    built earlier).
    """
    digest = hashlib.sha256()
    for source in sorted(sources):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    digest.update("|".join(p.name for p in classpath).encode())
    target = target_dir / f"{name}-{digest.hexdigest()[:16]}.jar"
    if target.is_file():
        return target
    javac_path = javac()
    target_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kgroup-javac-") as work:
        classes = Path(work) / "classes"
        command = [
            javac_path,
            "--release",
            "17",
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-cp",
            os.pathsep.join(str(p) for p in classpath),
            "-d",
            str(classes),
            *(str(s) for s in sources),
        ]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CompileFailed(f"javac did not run: {exc}") from exc
        if result.returncode != 0:
            first = (result.stderr.strip().splitlines() or ["no output"])[0]
            raise CompileFailed(f"javac failed: {first}")
        partial = Path(work) / f"{name}.jar"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        staged = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(partial, staged)
        os.replace(staged, target)
    return target


class MavenFailed(Exception):
    """``mvn`` is missing, timed out or could not resolve: the message says which (one line)."""


def _maven_error(output: str) -> str:
    """The line of mvn's output that says what went wrong (``[ERROR] …``), shortened."""
    for line in output.splitlines():
        text = line.strip()
        if text.startswith("[ERROR]") and len(text) > len("[ERROR] "):
            return text.removeprefix("[ERROR]").strip()[:300]
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def maven_copy_dependencies(
    pom: str, home: Path, folder: str, *, what: str, timeout_s: float, check: Callable[[Path], str | None]
) -> Path:
    """Resolve the runtime dependencies of the project ``pom`` with ``mvn`` and put their jars in
    ``home/folder`` (replacing what was there only once they are all fetched). ``what`` names them in
    messages; ``check`` looks at the staged folder and says what is wrong with it, or ``None``.
    Raises :class:`MavenFailed`."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenFailed(f"{what} needs Maven to fetch its jars: install it (e.g. apt-get install maven)")
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kgroup-mvn-", dir=home) as work:
        pom_file = Path(work) / "pom.xml"
        pom_file.write_text(pom)
        staged = Path(work) / folder
        command = [
            mvn, "-B", "-f", str(pom_file), f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
            f"-DoutputDirectory={staged}", "-DincludeScope=runtime",
        ]  # fmt: skip
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise MavenFailed(
                f"mvn did not finish resolving {what} within {timeout_s:.0f} s: check that Maven Central "
                "can be reached"
            ) from None
        except OSError as exc:
            raise MavenFailed(f"mvn did not run: {exc}") from None
        if result.returncode != 0:
            error = _maven_error(result.stdout + result.stderr)
            raise MavenFailed(
                f"mvn could not resolve {what}'s jars ({error}): check that Maven Central can be reached"
            )
        problem = check(staged)
        if problem is not None:
            raise MavenFailed(f"mvn finished but {problem}")
        final = home / folder
        if final.exists():
            shutil.rmtree(final)
        os.replace(staged, final)
    return final
