"""Java KeyStore (JKS) files read without Java, so MirrorMaker users' truststores and keystores
work unchanged: librdkafka (OpenSSL) cannot read JKS, so the certificates and keys become PEM
text at start-up (`ssl.ca.pem`, `ssl.certificate.pem`, `ssl.key.pem`), never written to disk.

The format (sun.security.provider.JavaKeyStore) is small: a big-endian header, entries of
trusted certificates (plain DER) or private keys (PKCS#8 protected by Sun's KeyProtector:
a SHA-1 keystream XOR), and a SHA-1 over the password, "Mighty Aphrodite" and the content.
JCEKS and PKCS12 are other formats: PKCS12 keystores are read by librdkafka itself.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
from dataclasses import dataclass, field
from pathlib import Path

from kmirror.errors import ConfigError

_MAGIC = 0xFEEDFEED
_KEY_PROTECTOR_OID = bytes.fromhex("2b060104012a02110101")  # 1.3.6.1.4.1.42.2.17.1.1
_WHITENER = b"Mighty Aphrodite"


@dataclass
class PrivateKeyEntry:
    alias: str
    pkcs8: bytes  # decrypted PKCS#8 DER
    chain: list[bytes]  # DER certificates, the key's own first


@dataclass
class JavaKeyStore:
    certificates: list[tuple[str, bytes]] = field(default_factory=list)  # trusted (alias, DER)
    keys: list[PrivateKeyEntry] = field(default_factory=list)


def is_jks(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == struct.pack(">I", _MAGIC)
    except OSError:
        return False


def _pem(kind: str, der: bytes) -> str:
    body = base64.encodebytes(der).decode().replace("\n", "")
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----\n"


def certificates_pem(ders: list[bytes]) -> str:
    return "".join(_pem("CERTIFICATE", d) for d in ders)


def key_pem(pkcs8: bytes) -> str:
    return _pem("PRIVATE KEY", pkcs8)


def _password_bytes(password: str) -> bytes:
    return password.encode("utf-16-be")  # Java chars, two bytes each


class _Reader:
    def __init__(self, data: bytes, path: str) -> None:
        self.data, self.pos, self.path = data, 0, path

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ConfigError(f"{self.path}: truncated Java keystore")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u32(self) -> int:
        value: int = struct.unpack(">I", self.take(4))[0]
        return value

    def utf(self) -> str:
        (length,) = struct.unpack(">H", self.take(2))
        return self.take(length).decode("utf-8", errors="replace")

    def cert(self) -> bytes:
        self.utf()  # certificate type, "X.509"
        return self.take(self.u32())


def read_jks(path: str, password: str | None, key_password: str | None = None) -> JavaKeyStore:
    """All entries of a JKS file. The password checks the file's integrity (Java skips the
    check without one, and so do we for truststores) and, unless `key_password` is given,
    decrypts private keys."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Java keystore {path!r} cannot be read ({exc.strerror})") from exc
    r = _Reader(data, path)
    if r.u32() != _MAGIC or r.u32() not in (1, 2):
        raise ConfigError(f"{path} is not a JKS keystore (JCEKS and PKCS12 are other formats)")
    store = JavaKeyStore()
    protected: list[tuple[str, bytes, list[bytes]]] = []
    for _ in range(r.u32()):
        tag, alias = r.u32(), r.utf()
        r.take(8)  # creation time
        if tag == 2:
            store.certificates.append((alias, r.cert()))
        elif tag == 1:
            key = r.take(r.u32())
            chain = [r.cert() for _ in range(r.u32())]
            protected.append((alias, key, chain))
        else:
            raise ConfigError(f"{path}: unknown JKS entry type {tag} (alias {alias!r})")
    if password is not None:
        digest = hashlib.sha1(_password_bytes(password) + _WHITENER + data[: r.pos]).digest()
        if not hmac.compare_digest(digest, r.take(20)):
            raise ConfigError(
                f"{path}: the keystore password is wrong (or the file was tampered with)"
            )
    for alias, key, chain in protected:
        if password is None:
            raise ConfigError(f"{path}: private key {alias!r} needs the keystore password")
        pkcs8 = _unprotect(key, key_password or password, path)
        store.keys.append(PrivateKeyEntry(alias, pkcs8, chain))
    return store


def _der(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at `pos`."""
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(data[pos : pos + n], "big")
        pos += n
    return tag, pos, pos + length


def _unprotect(encrypted_info: bytes, password: str, path: str) -> bytes:
    # EncryptedPrivateKeyInfo ::= SEQUENCE { AlgorithmIdentifier, OCTET STRING }
    _, seq, _ = _der(encrypted_info, 0)
    _, alg, alg_end = _der(encrypted_info, seq)
    _, oid, oid_end = _der(encrypted_info, alg)
    if encrypted_info[oid:oid_end] != _KEY_PROTECTOR_OID:
        raise ConfigError(f"{path}: a private key is not protected the JKS way; convert it with "
                          "keytool -importkeystore -deststoretype PKCS12")  # fmt: skip
    _, body, end = _der(encrypted_info, alg_end)
    blob = encrypted_info[body:end]
    salt, cipher, check = blob[:20], blob[20:-20], blob[-20:]
    secret = _password_bytes(password)
    stream, block = b"", salt
    while len(stream) < len(cipher):
        block = hashlib.sha1(secret + block).digest()
        stream += block
    key = bytes(a ^ b for a, b in zip(cipher, stream, strict=False))
    if not hmac.compare_digest(hashlib.sha1(secret + key).digest(), check):
        raise ConfigError(f"{path}: the key password is wrong: set ssl.key.password")
    return key
