"""The chaos tests import the integration tests' harness (tests/) and their
own modules (tests/chaos/)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.dirname(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)
