"""Validates Kubernetes manifests offline against the API's schemas, strictly (unknown fields are
errors), with the kubernetes-validate package: tests/tests/workers.rs checks
deploy/kubernetes/ through it.

Usage: validate_kubernetes.py FILE...
"""

import sys

from kubernetes_validate.__main__ import main

sys.argv = ["kubernetes-validate", "--strict", "--quiet", *sys.argv[1:]]
sys.exit(main())
