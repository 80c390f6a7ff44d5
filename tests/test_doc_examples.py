"""Every example shown to users holds: the assignment files in docs/ and examples/ (their
``expected`` is Kafka's real answer) and the scenario YAML in the docs (it parses)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.doc_commands import Command, python_blocks, shell_blocks

from kgroup.assignors.fileformat import check_vector, parse_assignment_file, run_assignment_file
from kgroup.cli import main
from kgroup.sim.scenario import scenario_from_text

ROOT = Path(__file__).parents[1]
PAGES = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "examples" / "README.md"])
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(language: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for page in PAGES:
        for n, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            if match.group(1) == language:
                out.append((f"{page.relative_to(ROOT)}#{n}", match.group(2)))
    return out


def _assignment_files() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name, text in _blocks("json"):
        if '"assignor"' not in text:
            continue  # other JSON (abridged output shapes with …) is not a file to run
        data = json.loads(text)
        if isinstance(data, dict) and "input" in data:
            found.append((name, data))
    for path in sorted((ROOT / "examples").rglob("*.json")):
        found.append((str(path.relative_to(ROOT)), json.loads(path.read_text(encoding="utf-8"))))
    return found


ASSIGNMENT_FILES = _assignment_files()


def test_the_docs_have_assignment_examples() -> None:
    names = [name for name, _ in ASSIGNMENT_FILES]
    assert any(n.startswith("docs/assignors.md") for n in names), names
    assert "examples/assign/group.json" in names


@pytest.mark.parametrize(("name", "data"), ASSIGNMENT_FILES, ids=[n for n, _ in ASSIGNMENT_FILES])
def test_every_assignment_example_runs_and_its_expected_is_kafkas_answer(name: str, data: Any) -> None:
    af = parse_assignment_file(data, source=name)
    run_assignment_file(af)  # every example runs as shown
    if "expected" in data:
        result = check_vector(data, name=name)
        assert result.exact, f"{name}: {result}"


@pytest.mark.parametrize(("name", "text"), _blocks("yaml"), ids=[n for n, _ in _blocks("yaml")])
def test_every_scenario_example_in_the_docs_parses(name: str, text: str) -> None:
    scenario_from_text(text, name="doc")


# --- every documented CLI and Spark example, run as written on a fresh broker (issue 31) -------------


#: the kgroup commands of the docs that are not run here, and why (checked: each is still in the docs)
NOT_RUN: dict[str, str] = {
    "kgroup demo": "1,000,000 events: minutes; tests/spark/test_demo.py runs the demo on 4,000",
    "kgroup demo --rebalance-seeds 0": "1,000,000 events (as kgroup demo)",
    "kgroup demo --events 200000 --seed 7 --report /tmp/report": "200,000 events: a minute and more",
    "kgroup demo --partitions 6 --grow-to 12 --null-key-strategy uniform-sticky": "1,000,000 events",
    "kgroup demo --master spark://host:7077": "a Spark cluster at a placeholder address",
    "kgroup demo --master spark://host:7077 --json": "a Spark cluster at a placeholder address",
    "kgroup partition --input s3a://bucket/path --format parquet -p 12 --key-column k --master "
    "spark://host:7077": "a Spark cluster and an S3 bucket at placeholder addresses",
    "kgroup validate": "the built-in set on both brokers: about 8 minutes; tests/validate runs its parts",
    "kgroup validate crash-range-3 --brokers kgroup --json": "real clients over a scenario's minutes",
    "kgroup validate --seeds 12 --sim-jitter-ms 20": "the built-in set on both brokers, 12 seeds",
    "kgroup validate crash-range-3 static-restart-range-6 --brokers kgroup": "real clients, minutes",
    "kgroup validate my-scenario.yaml --brokers apache --json '>' validation.json": "a scenario of yours",
    "kgroup simulate --campaign 1000 --seed 0 --engine local": "1,000 scenarios: 153 s on 2 loaded cores",
    "kgroup bench assign --case uniform --assignor sticky --phase reassign": "a benchmark: 18 s",
    "kgroup bench assign --all": "the whole benchmark table: long",
    "kgroup bench assign --case uniform --assignor sticky --leader-path": "a benchmark beside Java: 35 s",
    "kgroup bench simulate": "a benchmark: 67 s",
    "kgroup assign --list '|' grep fewest": "needs the plug-in package of its section installed",
    "kgroup assign group.json --assignor fewest-first": "needs the plug-in package of its section installed",
    "kgroup record -b broker1:9092 -g payments -o rec/ --since 2026-11-26T15:00:00Z --follow": (
        "--follow reads until Ctrl-C; the same read without --follow runs"
    ),
}
#: shell commands that set up what the next kgroup command reads (run by bash as written)
SETUP = ("printf", "cat")
#: the pages whose shell examples run (in order, each page in one test: later blocks use what earlier
#: ones started); every other page's commands are make/pytest/benchmark scripts or not run (NOT_RUN)
RUN_PAGES = (
    "README.md",
    "docs/assignors.md",
    "docs/broker.md",
    "docs/record.md",
    "docs/spark.md",
    "docs/testing.md",
)
#: docs/security.md's blocks that test_the_security_page_runs_as_written runs
SECURITY_BLOCKS = ("docs/security.md#0", "docs/security.md#7")
ADDRESSES = ("127.0.0.1:9092", "broker1:9092")
PATH_OPTIONS = ("--input", "--output", "--report", "--out", "-o")
GROUPS = ("billing", "payments")
ORDERS = 300


def test_every_kgroup_command_in_the_docs_runs_or_says_why_not() -> None:
    """Each kgroup command shown in README.md and docs/ is run by a test below, or NOT_RUN says why."""
    commands = {c.text for b in shell_blocks() for c in b.commands if c.is_kgroup}
    assert set(NOT_RUN) <= commands, sorted(set(NOT_RUN) - commands)  # no stale entry
    ran = {
        c.text
        for b in shell_blocks()
        if b.name.split("#")[0] in RUN_PAGES or b.name in SECURITY_BLOCKS
        for c in b.commands
    }
    assert sorted(commands - ran - set(NOT_RUN)) == [], "a documented kgroup command no test runs"


@pytest.fixture(scope="module")
def doc_cluster() -> Any:
    """The reader's cluster: a fresh kgroup broker with the docs' topics, records in ``orders`` and
    the groups the examples name, each with a committed offset."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kgroup.testing import KafkaBroker

    with KafkaBroker(topics={"orders": 12, "payments": 6}) as kafka:
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "partitioner": "murmur2_random"})
        for n in range(ORDERS):
            producer.produce("orders", key=f"customer-{n % 40}".encode(), value=b'{"amount": 1}')
        assert producer.flush(30) == 0
        for group in GROUPS:
            consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group})
            consumer.commit(offsets=[TopicPartition("orders", 1, 4)], asynchronous=False)
            consumer.close()
        yield kafka


@pytest.fixture(scope="module")
def reader_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder a reader runs the examples in: the repository's examples and vectors, and the data
    files the examples name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = tmp_path_factory.mktemp("reader")
    (work / "tests").mkdir()
    (work / "tests" / "vectors").symlink_to(ROOT / "tests" / "vectors")
    (work / "examples").symlink_to(ROOT / "examples")
    (work / "group.json").write_text((ROOT / "examples" / "assign" / "group.json").read_text())
    zk = {
        "assignor": "legacy-range",
        "input": {
            "topics": [{"name": "orders", "partitions": 6}],
            "members": [
                {"memberId": "c1", "topics": ["orders"], "streams": {"orders": 2}},
                {"memberId": "c2", "topics": ["orders"], "streams": {"orders": 1}},
            ],
        },
    }
    (work / "zk.json").write_text(json.dumps(zk))
    customers = [f"customer-{n % 97}" if n % 10 else None for n in range(2_000)]
    orders = pa.table({"customer_id": customers, "amount": list(range(2_000))})
    pq.write_table(orders, work / "orders.parquet")
    (work / "orders").mkdir()
    pq.write_table(orders, work / "orders" / "part-0.parquet")
    (work / "events").mkdir()
    pq.write_table(pa.table({"user": customers}), work / "events" / "part-0.parquet")
    (work / "events.csv").write_text("user\n" + "\n".join(c or "" for c in customers) + "\n")
    return work


class Page:
    """One page's examples run in order in the reader's folder: kgroup commands in this process, a
    ``kgroup serve`` as its own process (kept running for the page, stopped at its end)."""

    def __init__(self, work: Path, cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
        self.work = work
        self.cluster = cluster
        self.capsys = capsys
        self.servers: list[tuple[subprocess.Popen[bytes], bool]] = []
        #: each server's stderr, by pid (shown when one does not end as it should)
        self.stderr: dict[int, Path] = {}

    def argv(self, command: Command) -> list[str]:
        args = list(command.argv[1:])
        for n, arg in enumerate(args):
            if arg in ADDRESSES:  # the reader's cluster (the one with the groups the examples name)
                args[n] = self.cluster.bootstrap_servers
            elif n and args[n - 1] in PATH_OPTIONS and not Path(arg).is_absolute() and "://" not in arg:
                # the test's one Spark session runs in another folder than the reader's shell
                args[n] = str(self.work / arg)
        return args

    def run(self, command: Command) -> str:
        if not command.is_kgroup:
            assert command.argv[0] in SETUP, command.text
            subprocess.run(["bash", "-c", command.raw], cwd=self.work, check=True, timeout=30)
            return ""
        args = self.argv(command)
        if args[0] == "serve":
            self.stop(foreground_only=True)  # the reader stopped the one before (Ctrl-C)
            return self.serve(args, command.background)
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(args)
        out, err = self.capsys.readouterr()
        code = exited.value.code
        assert code in (0, None), f"{command.text}: exit {code}\n{err[-2000:]}"
        assert "Traceback" not in err, err
        return out

    def serve(self, args: list[str], background: bool) -> str:
        if "--port" not in args and not any(a.startswith("--listener") for a in args):
            args += ["--port", "0"]  # 9092 may be taken on a shared machine; the port is printed
        log = self.work / f"serve-{len(list(self.work.glob('serve-*.out')))}.out"
        with log.open("w") as out, log.with_suffix(".err").open("w") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "kgroup", *args], cwd=self.work, stdout=out, stderr=err
            )
        self.servers.append((process, background))
        self.stderr[process.pid] = log.with_suffix(".err")
        for _ in range(600):  # bounded: 60 s for the broker to print bootstrap.servers
            text = log.read_text()
            if "bootstrap.servers=" in text or process.poll() is not None:
                break
            time.sleep(0.1)
        assert process.poll() is None and "bootstrap.servers=" in text, text
        return text

    def stop(self, foreground_only: bool = False) -> None:
        keep = []
        for process, background in self.servers:
            if foreground_only and background:
                keep.append((process, background))
                continue
            process.terminate()
            code = process.wait(60)
            if code != 0:  # what it said on its way out
                said = self.stderr[process.pid].read_text()[-3000:] or "nothing"
                raise AssertionError(f"{process.args}: exit {code}; on stderr: {said}")
        self.servers = keep


@pytest.mark.recording
@pytest.mark.spark
@pytest.mark.parametrize("page", RUN_PAGES)
def test_the_shell_examples_of_a_page_run_as_written(
    page: str,
    spark: Any,
    doc_cluster: Any,
    reader_folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(reader_folder)
    runner = Page(reader_folder, doc_cluster, capsys)
    outputs: dict[str, str] = {}
    try:
        for block in shell_blocks():
            if block.name.split("#")[0] != page:
                continue
            for command in block.commands:
                if command.text in NOT_RUN or (command.argv and command.argv[0] in _NOT_KGROUP):
                    continue
                outputs[command.text] = runner.run(command)
            runner.stop()  # the block's brokers, as the reader stops them before the next
    finally:
        runner.stop()
    assert outputs, page
    said = outputs.get(
        "kgroup partition --input orders/ --key-column customer_id -p 12 --output orders-by-partition/"
    )
    if said is not None:  # issue 31: the --output line names the folders it wrote
        # rich wraps the line at the console's width (80 columns here), where depends on the length
        # of the reader's folder (pytest-0 on a fresh machine, pytest-12 on a used one): the words
        # are compared with the wraps undone
        assert "one folder per partition value: partition=0/ … partition=11/" in " ".join(said.split())
        assert (reader_folder / "orders-by-partition" / "partition=3").is_dir()


_NOT_KGROUP = ("make", "pytest", ".venv/bin/python", "python", "pip", "KGROUP_ORACLE_SEED=595917567")


#: the Spark examples (Python), run in page order in one namespace per page, given the reader's
#: ``spark`` (the docs' "your own session"); the rest of the Python blocks are library examples
SPARK_EXAMPLES = (
    "README.md#3",
    "docs/spark.md#2",
    "docs/spark.md#3",
    "docs/spark.md#4",
    "docs/spark-group.md#0",
)


@pytest.mark.recording
@pytest.mark.spark
def test_the_spark_examples_run_as_written(
    spark: Any, doc_cluster: Any, reader_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each on the reader's cluster (``127.0.0.1:9092`` is its address): docs/spark.md's sink writes
    ``orders-copy``, a topic that does not exist yet, which the broker creates as for Spark's own sink."""
    from confluent_kafka.admin import AdminClient

    monkeypatch.chdir(reader_folder)  # out/, chk/: the Python side; Spark's paths are made absolute
    blocks = python_blocks()
    namespaces: dict[str, dict[str, Any]] = {}
    for name in SPARK_EXAMPLES:
        source = blocks[name].replace("127.0.0.1:9092", doc_cluster.bootstrap_servers)
        for relative in ('"orders.parquet"', '"out/"', '"chk/"', '"chk/orders"', '"data/orders"'):
            source = source.replace(relative, repr(str(reader_folder / relative.strip('"'))))
        namespace = namespaces.setdefault(name.split("#")[0], {"spark": spark})
        exec(compile(source, name, "exec"), namespace)
        for query in spark.streams.active:  # the streaming examples: started, run to their end
            query.awaitTermination(120)
            assert query.exception() is None, (name, query.exception())
    admin = AdminClient({"bootstrap.servers": doc_cluster.bootstrap_servers})
    copy = admin.list_topics("orders-copy", timeout=10)
    assert copy.topics["orders-copy"].error is None and copy.topics["orders-copy"].partitions
    namespace = namespaces["docs/spark.md"]
    assert namespace["df"].count() == ORDERS  # the batch read of the sink's example: every record


@pytest.mark.recording
@pytest.mark.security
def test_the_security_page_runs_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/security.md in order: `kgroup test-ca`, the users file, `kgroup serve` with four listeners
    and an authorizer (free ports for the documented ones), the reader's application (a group
    `orders-app` committing as the admin), the AdminClient's ACLs of "Creating ACLs" (run first, as the
    page says), then `kgroup lag` and `kgroup record` with the page's client.properties."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    monkeypatch.chdir(tmp_path)
    blocks = {b.name: b for b in shell_blocks() if b.name.startswith("docs/security.md")}
    setup, client = (blocks[name] for name in SECURITY_BLOCKS)
    page = Page(tmp_path, None, capsys)
    where: dict[str, str] = {}  # the documented address -> the port the broker took
    try:
        for command in setup.commands:
            if command.argv[:2] != ("kgroup", "serve"):
                page.run(command)
                continue
            args = list(command.argv[1:])
            for n, arg in enumerate(args):
                if args[n - 1] == "--listener":
                    name, _, address = arg.partition("://")
                    where[address] = name
                    args[n] = f"{name}://127.0.0.1:0"
            said = page.serve(args, background=True)
            found = dict(re.findall(r"broker 0 listening on (\w+)://(127\.0\.0\.1:\d+)", said))
            where = {doc: found[name] for doc, name in where.items()}
        assert sorted(where) == ["127.0.0.1:9092", "127.0.0.1:9093", "127.0.0.1:9094", "127.0.0.1:9095"]
        admin_settings = {
            "bootstrap.servers": where["127.0.0.1:9094"],
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
        admin = AdminClient(admin_settings)
        admin.create_topics([NewTopic("orders", 3)])["orders"].result(10)
        consumer = Consumer({**admin_settings, "group.id": "orders-app"})
        consumer.commit(offsets=[TopicPartition("orders", 0, 0)], asynchronous=False)
        consumer.close()
        [acls] = [text for text in python_blocks().values() if "admin.create_acls(" in text]
        source = acls.replace("127.0.0.1:9094", where["127.0.0.1:9094"])
        namespace: dict[str, Any] = {}
        exec(compile(source, "docs/security.md (Creating ACLs)", "exec"), namespace)
        capsys.readouterr()
        for command in client.commands:
            argv = tuple(where.get(a, a) for a in command.argv)
            text = command.raw if command.heredoc else shlex.join(argv)
            page.run(Command(text, argv, raw=text, heredoc=command.heredoc))
    finally:
        page.stop()
    recording = json.loads((tmp_path / "rec" / "orders-app" / "result.json").read_text())
    assert recording["metrics"]["offset_commits"] == 1
