"""A program that dies without reporting why."""

import os
import sys

print("custom failure from the program", file=sys.stderr, flush=True)
os._exit(3)
