"""`ftlab serve` over TLS, with qemu-io as the client (the NBD tools' conventions: STARTTLS
in the handshake, TLS required once configured): pre-shared keys and an X.509 certificate,
a client without TLS or with a wrong key refused, bad TLS files refused at start-up."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from nbd_helpers import SMALL_DEVICE, Served, need


def qemu_io_tls(
    served: Served, creds: list[str], *commands: str
) -> subprocess.CompletedProcess[str]:
    """qemu-io against the export, with the TLS object `creds` (none: a plain client)."""
    image = f"driver=nbd,host={served.host},port={served.port},export=ftlab"
    args = [need("qemu-io", "qemu-utils")]
    if creds:
        args += ["--object", ",".join(creds), "--image-opts", image + ",tls-creds=tls0"]
    else:
        args += ["--image-opts", image]
    for c in commands:
        args += ["-c", c]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


PATTERNS = ("write -P 0x5a 0 256k", "read -P 0x5a 0 256k", "flush")


def ok(out: subprocess.CompletedProcess[str]) -> bool:
    text = out.stdout + out.stderr
    return out.returncode == 0 and "failed" not in text and "rror" not in text


def test_psk(tmp_path: Path) -> None:
    server_keys = tmp_path / "server.psk"
    key = secrets.token_hex(32)
    server_keys.write_text(f"alice:{key}\n")
    # qemu's tls-creds-psk reads keys.psk in its directory.
    client = tmp_path / "client"
    client.mkdir()
    (client / "keys.psk").write_text(f"alice:{key}\n")
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "keys.psk").write_text(f"alice:{secrets.token_hex(32)}\n")

    def creds(folder: Path) -> list[str]:
        return [f"tls-creds-psk,id=tls0,endpoint=client,dir={folder}", "username=alice"]

    served = Served(tmp_path / "store", sets=SMALL_DEVICE, extra=["--tls-psk", str(server_keys)])
    try:
        out = qemu_io_tls(served, creds(client), *PATTERNS)
        assert ok(out), out.stdout + out.stderr
        # Without TLS, and with a wrong key: refused, the server goes on.
        assert not ok(qemu_io_tls(served, [], "read 0 4k"))
        assert not ok(qemu_io_tls(served, creds(wrong), "read 0 4k"))
        out = qemu_io_tls(served, creds(client), "read -P 0x5a 0 256k")
        assert ok(out), out.stdout + out.stderr
    finally:
        assert served.stop() == 0, served.text()
    # The wrong key's handshake, named in the server's log.
    assert "TLS handshake failed" in served.text(), served.text()


def test_certificate(tmp_path: Path) -> None:
    openssl = need("openssl", "openssl")
    client = tmp_path / "client"
    client.mkdir()
    ca_key, ca = tmp_path / "ca-key.pem", client / "ca-cert.pem"
    key, csr, cert = tmp_path / "key.pem", tmp_path / "req.csr", tmp_path / "cert.pem"
    ext = tmp_path / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    for cmd in (
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key),
         "-out", str(ca), "-days", "1", "-subj", "/CN=ftlab test CA"],
        [openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
         "-subj", "/CN=127.0.0.1"],
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
         "-CAcreateserial", "-out", str(cert), "-days", "1", "-extfile", str(ext)],
    ):  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    extra = ["--tls-cert", str(cert), "--tls-key", str(key)]
    served = Served(tmp_path / "store", sets=SMALL_DEVICE, extra=extra)
    try:
        # qemu checks the certificate against the CA in `dir` and the address.
        x509 = [f"tls-creds-x509,id=tls0,endpoint=client,dir={client}"]
        out = qemu_io_tls(served, x509, *PATTERNS)
        assert ok(out), out.stdout + out.stderr
        assert not ok(qemu_io_tls(served, [], "read 0 4k"))
    finally:
        assert served.stop() == 0, served.text()


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (["--tls-psk", "{dir}/bad.psk"], "bad.psk:2: the key is not an even number"),
        (["--tls-psk", "{dir}/missing.psk"], "missing.psk"),
        (["--tls-cert", "{dir}/bad.psk", "--tls-key", "{dir}/bad.psk"], "TLS: "),
        (["--tls-cert", "{dir}/bad.psk"], "--tls-cert and --tls-key go together"),
    ],
)
def test_bad_tls_files_are_refused_at_start_up(
    tmp_path: Path, files: list[str], message: str
) -> None:
    (tmp_path / "bad.psk").write_text("alice:00ff\nbob:0\n")
    store = tmp_path / "store"
    args = [sys.executable, "-m", "ftlab", "serve", "--preset", "small", "--store", str(store),
            "--listen", "127.0.0.1:0", *[f.format(dir=tmp_path) for f in files]]  # fmt: skip
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and message in out.stderr, out.stderr
    assert not store.exists()  # nothing made


def test_real_timing_paces_replies_over_tls(tmp_path: Path) -> None:
    """With --timing real over TLS the replies go out through the pacing thread too (it
    shares the TLS session with the connection's reader): each write is answered when the
    simulated program is done (here 200 ms), and the data is right."""
    key = secrets.token_hex(32)
    (tmp_path / "server.psk").write_text(f"alice:{key}\n")
    client = tmp_path / "client"
    client.mkdir()
    (client / "keys.psk").write_text(f"alice:{key}\n")
    creds = [f"tls-creds-psk,id=tls0,endpoint=client,dir={client}", "username=alice"]
    sets = [*SMALL_DEVICE, "buffer.size_bytes=0", 'nand.program_latency_ns="200ms"']
    extra = ["--tls-psk", str(tmp_path / "server.psk"), "--timing", "real"]
    served = Served(tmp_path / "store", sets=sets, extra=extra)
    try:
        t0 = time.monotonic()
        # Two writes one after the other (qemu-io waits for each reply), then their reads.
        out = qemu_io_tls(
            served, creds, "write -P 0x33 0 4k", "write -P 0x44 4k 4k", "read -P 0x33 0 4k",
            "read -P 0x44 4k 4k",
        )  # fmt: skip
        elapsed = time.monotonic() - t0
        assert ok(out), out.stdout + out.stderr
        assert elapsed >= 0.4, elapsed
    finally:
        assert served.stop() == 0, served.text()
    assert "paced replies (--timing real):" in served.text(), served.text()
