"""``kgroup serve``'s security flags and ``kgroup test-ca`` (a real ``kgroup serve`` process and a
real client), their one-line errors, and that no secret reaches a log, a recording or the data
directory."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from kgroup.cli import main
from kgroup.security.listeners import build_security_config
from kgroup.testing import KafkaBroker

SECRET = "Pa55-never-logged-91xq"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 1), out, err


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--listener", "CLIENT://127.0.0.1:0"], "--listener-security-protocol-map"),
        (["--listener", "SASL_PLAINTEXT//127.0.0.1:0"], "NAME://HOST:PORT"),
        (["--listener", "SSL://127.0.0.1:0"], "--ssl-certfile"),
        (["--ssl-client-auth", "maybe"], "ssl.client.auth"),
        (["--sasl-mechanism", "GSSAPI"], "sasl.enabled.mechanisms"),
        (["--sasl-user", "alice"], "NAME:PASSWORD"),
        (["--super-user", "admin"], "User:NAME"),
        (["--listener-security-protocol-map", "CLIENT:TLS"], "listener.security.protocol.map"),
    ],
)
def test_bad_security_flags_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], names: str
) -> None:
    code, _out, err = run(capsys, "serve", "--data-dir", str(tmp_path), *args)
    assert code == 2
    assert err.startswith("kgroup: error: ") and err.count("\n") == 1, err
    assert names in err
    assert "Traceback" not in err


def test_test_ca_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _err = run(capsys, "test-ca", str(tmp_path / "ca"), "--client", "alice")
    assert code == 0
    for name in ("ca.pem", "server.pem", "server.key", "alice.pem", "alice.key"):
        assert (tmp_path / "ca" / name).is_file(), name
    assert "client alice:" in out


def test_warning_for_listeners_beyond_loopback_without_authentication() -> None:
    config = build_security_config(
        listeners=["PLAINTEXT://0.0.0.0:9092", "SASL_PLAINTEXT://0.0.0.0:9093", "LOCAL://127.0.0.1:9094"],
        listener_security_protocol_map="LOCAL:PLAINTEXT",
    )
    assert [str(item) for item in config.open_listeners_beyond_loopback()] == ["PLAINTEXT://0.0.0.0:9092"]


@pytest.fixture
def serve_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    users = tmp_path / "users.txt"
    users.write_text(f"# the test's users\nalice:{SECRET}\n")
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kgroup",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(data),
            "--listener",
            "SASL_PLAINTEXT://127.0.0.1:0",
            "--sasl-users-file",
            str(users),
            "--topic",
            "orders:1",
            "--record",
            str(tmp_path / "rec"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        yield process, tmp_path
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def test_kgroup_serve_with_a_sasl_listener_keeps_secrets_out(
    serve_process: tuple[subprocess.Popen[str], Path],
) -> None:
    process, tmp_path = serve_process
    assert process.stdout is not None
    line = ""
    for _ in range(10):
        line = process.stdout.readline()
        if "SASL_PLAINTEXT://" in line:
            break
    assert "SASL_PLAINTEXT://127.0.0.1:" in line, line
    bootstrap = line.rsplit("//", 1)[1].strip()
    base = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.username": "alice"}
    for mechanism in ("PLAIN", "SCRAM-SHA-512"):
        producer = confluent_kafka.Producer({**base, "sasl.mechanisms": mechanism, "sasl.password": SECRET})
        producer.produce("orders", b"ok")
        assert producer.flush(15) == 0
        errors: list[confluent_kafka.KafkaError] = []
        wrong = confluent_kafka.Producer(
            {**base, "sasl.mechanisms": mechanism, "sasl.password": SECRET + "x", "error_cb": errors.append}
        )
        for _ in range(50):
            wrong.poll(0.2)
            if errors:
                break
        assert any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in errors)
        consumer = confluent_kafka.Consumer(
            {
                **base,
                "sasl.mechanisms": mechanism,
                "sasl.password": SECRET,
                "group.id": f"g-{mechanism}",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["orders"])
        received = None
        for _ in range(30):  # authenticated, joined its group and read the first record
            received = consumer.poll(0.5)
            if received is not None:
                break
        consumer.close()  # commits the group's offset: group state in the data dir and the recording
        assert received is not None and received.error() is None, received and received.error()
        assert received.value() == b"ok"
    process.terminate()
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired as stuck:
        written = stuck.stderr or b""
        tail = (written.decode(errors="replace") if isinstance(written, bytes) else written)[-6000:]
        pytest.fail(f"kgroup serve still running 30 s after SIGTERM; its stderr ends with:\n{tail}")
    assert "SASL authentication failed" in err  # the failures were logged ...
    assert SECRET not in err  # ... without the password
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.name != "users.txt":
            assert SECRET.encode() not in path.read_bytes(), path


def test_no_secret_in_debug_logs(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG, logger="kgroup")
    with KafkaBroker(
        listeners=["SASL_PLAINTEXT://127.0.0.1:0"], sasl_users={"bob": SECRET}, record_dir=tmp_path / "rec"
    ) as kafka:
        for password in (SECRET, SECRET[:-1]):
            for mechanism in ("PLAIN", "SCRAM-SHA-256"):
                errors: list[confluent_kafka.KafkaError] = []
                producer = confluent_kafka.Producer(
                    {
                        "bootstrap.servers": kafka.bootstrap_servers,
                        "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanisms": mechanism,
                        "sasl.username": "bob",
                        "sasl.password": password,
                        "error_cb": errors.append,
                    }
                )
                producer.produce("t", b"v")
                producer.flush(3 if password != SECRET else 15)
                producer.purge()
    assert "SASL" in caplog.text
    assert SECRET not in caplog.text and SECRET[:-1] not in caplog.text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET[:-1].encode() not in path.read_bytes(), path
