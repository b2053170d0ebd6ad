#!/usr/bin/env python3
"""Independent implementation of Pulumi's passphrase secrets scheme.

Used by tests/passphrase_interop.rs to check Converge against Python's
`cryptography` package (OpenSSL). Scheme:

  key  = PBKDF2-HMAC-SHA256(passphrase, salt, 1,000,000 rounds, 32 bytes)
  ct   = "v1:" + b64(nonce[12]) + ":" + b64(AES-256-GCM(key, nonce, pt, no AAD))
  encryptionsalt = "v1:" + b64(salt[8]) + ":" + ct("pulumi")

Commands (results on stdout; strings given as JSON on stdin when plural):

  makesalt <passphrase>
      print a new encryptionsalt
  encrypt <passphrase> <encryptionsalt> <plaintext>
      print a ciphertext of <plaintext>
  decrypt <passphrase> <encryptionsalt> <ciphertext>
      print the plaintext
  encrypt-many <passphrase> <encryptionsalt>   (stdin: JSON list of plaintexts)
      print a JSON list of ciphertexts
  decrypt-many <passphrase> <encryptionsalt>   (stdin: JSON list of ciphertexts)
      print a JSON list of plaintexts, or null where decryption failed

Exit status: 0 ok, 2 wrong passphrase, 3 a ciphertext did not decrypt,
1 anything else (usage, malformed input).
"""

import base64
import binascii
import json
import os
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

ITERATIONS = 1_000_000
CHECK = "pulumi"


class WrongPassphrase(Exception):
    pass


class Malformed(Exception):
    pass


def b64decode(text):
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as e:
        raise Malformed(f"bad base64 {text!r}: {e}") from e


def b64encode(data):
    return base64.b64encode(data).decode("ascii")


def derive_key(passphrase, salt):
    kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=ITERATIONS)
    return kdf.derive(passphrase.encode("utf-8"))


def encrypt(key, plaintext):
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode("utf-8"), None)
    return f"v1:{b64encode(nonce)}:{b64encode(sealed)}"


def decrypt(key, ciphertext):
    """Plaintext, or None when authentication fails."""
    parts = ciphertext.split(":")
    if len(parts) != 3 or parts[0] != "v1":
        raise Malformed(f"ciphertext {ciphertext!r} is not v1:<nonce>:<ct>")
    nonce, sealed = b64decode(parts[1]), b64decode(parts[2])
    if len(nonce) != 12:
        raise Malformed(f"nonce of {len(nonce)} bytes")
    try:
        plain = AESGCM(key).decrypt(nonce, sealed, None)
    except InvalidTag:
        return None
    return plain.decode("utf-8")


def open_salt(passphrase, encryption_salt):
    """The key of a stack, after checking the passphrase."""
    parts = encryption_salt.split(":", 2)
    if len(parts) != 3 or parts[0] != "v1":
        raise Malformed(f"encryptionsalt {encryption_salt!r} is not v1:<salt>:<ciphertext>")
    key = derive_key(passphrase, b64decode(parts[1]))
    if decrypt(key, parts[2]) != CHECK:
        raise WrongPassphrase()
    return key


def make_salt(passphrase):
    salt = os.urandom(8)
    key = derive_key(passphrase, salt)
    return f"v1:{b64encode(salt)}:{encrypt(key, CHECK)}"


def main(argv):
    if len(argv) < 2:
        raise Malformed("usage: see the docstring")
    cmd, args = argv[1], argv[2:]
    if cmd == "makesalt" and len(args) == 1:
        print(make_salt(args[0]))
    elif cmd == "encrypt" and len(args) == 3:
        print(encrypt(open_salt(args[0], args[1]), args[2]))
    elif cmd == "decrypt" and len(args) == 3:
        plain = decrypt(open_salt(args[0], args[1]), args[2])
        if plain is None:
            print("error: ciphertext did not decrypt", file=sys.stderr)
            return 3
        sys.stdout.write(plain)
    elif cmd == "encrypt-many" and len(args) == 2:
        key = open_salt(args[0], args[1])
        print(json.dumps([encrypt(key, p) for p in json.load(sys.stdin)]))
    elif cmd == "decrypt-many" and len(args) == 2:
        key = open_salt(args[0], args[1])
        print(json.dumps([decrypt(key, c) for c in json.load(sys.stdin)]))
    else:
        raise Malformed(f"unknown command or wrong arguments: {argv[1:]!r}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except WrongPassphrase:
        print("error: incorrect passphrase", file=sys.stderr)
        sys.exit(2)
    except Malformed as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
