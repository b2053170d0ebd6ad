"""Runs moto's S3 server with atomic conditional writes.

Real S3 checks `If-None-Match: *` and `If-Match` and stores the object as
one step, so of two conditional creates of one key exactly one succeeds.
moto 5.2.5 checks the condition and then stores the object without a lock,
while its server handles requests on threads: under load, two creates of
one key can both succeed (seen in its request log, both `PUT ... 200`).
Converge's stack lease and journal rely on the first behaviour, and so do
the tests that race two updates, so this wrapper serializes object PUTs
(the condition and the write) and otherwise starts moto unchanged.

Usage: python moto_server.py [moto_server's arguments]
"""

import sys
import threading

from moto.s3.responses import S3Response
from moto.server import main

_put_lock = threading.Lock()
_put_object = S3Response.put_object


def _atomic_put_object(self):
    with _put_lock:
        return _put_object(self)


S3Response.put_object = _atomic_put_object

if __name__ == "__main__":
    sys.exit(main())
