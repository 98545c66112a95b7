"""Throw-away PKI for the local control plane: a CA, the apiserver's serving cert, an admin client
cert (system:masters) and the service-account signing key. Generated in-process with `cryptography`
so the bed needs no openssl invocations."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    dir: Path

    @property
    def ca_crt(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def apiserver_crt(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def apiserver_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def admin_crt(self) -> Path:
        return self.dir / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.dir / "admin.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"


def _key() -> ec.EllipticCurvePrivateKey:
    # EC keys are generated in microseconds; RSA-2048 would cost ~100 ms each on this machine.
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _cert(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    server_sans: list[x509.GeneralName] | None = None,
    client: bool = False,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        # Python 3.13's strict verification wants key identifiers on every certificate of the chain
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )
    # a CA signs certificates; a leaf signs and encrypts its TLS handshakes
    b = b.add_extension(
        x509.KeyUsage(
            digital_signature=True,
            key_cert_sign=ca,
            crl_sign=ca,
            key_encipherment=not ca,
            content_commitment=False,
            data_encipherment=False,
            key_agreement=False,
            encipher_only=False,
            decipher_only=False,
        ),
        critical=True,
    )
    if not ca:
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [ExtendedKeyUsageOID.SERVER_AUTH]
        b = b.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if server_sans:
        b = b.add_extension(x509.SubjectAlternativeName(server_sans), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def other_ca_pem(common_name: str = "another-ca") -> bytes:
    """A CA certificate (PEM) that signed nothing of the bed's: a trust anchor the apiserver's certificate fails."""
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    return _cert(name, key, name, key, ca=True).public_bytes(serialization.Encoding.PEM)


def generate(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "drain-testbed-ca")])
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    pki.ca_crt.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _write_key(directory / "ca.key", ca_key)

    srv_key = _key()
    sans: list[x509.GeneralName] = [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default"),
        x509.DNSName("kubernetes.default.svc"),
    ]
    srv = _cert(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
        srv_key,
        ca_name,
        ca_key,
        server_sans=sans,
    )
    pki.apiserver_crt.write_bytes(srv.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.apiserver_key, srv_key)

    adm_key = _key()
    adm = _cert(
        x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                x509.NameAttribute(NameOID.COMMON_NAME, "testbed-admin"),
            ]
        ),
        adm_key,
        ca_name,
        ca_key,
        client=True,
    )
    pki.admin_crt.write_bytes(adm.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.admin_key, adm_key)

    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.sa_key, sa)
    pki.sa_pub.write_bytes(
        sa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return pki
