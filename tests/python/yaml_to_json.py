"""Prints the YAML documents of a file as one JSON array, read by PyYAML's safe loader:
tests/tests/workers.rs checks the Kubernetes manifest's fields through it."""

import json
import sys

import yaml

with open(sys.argv[1], encoding="utf-8") as f:
    print(json.dumps(list(yaml.safe_load_all(f))))
