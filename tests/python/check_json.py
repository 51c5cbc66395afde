"""Checks a respbench --json document with independent implementations.

Usage: check_json.py SCHEMA DOCUMENT

- validates DOCUMENT against the JSON Schema SCHEMA (draft 2020-12, the `jsonschema` package);
- decodes every test's histogram with HdrHistogram's Python implementation (the `hdrhistogram`
  package) and checks that its count (requests and lower bounds), min, max and percentiles are
  the ones respbench reported, and that an open loop's arrivals add up; likewise an open loop's
  lateness histogram, whose count is the requests sent (the answered ones at least, with the
  lost and abandoned at most);
  likewise each node's of a test over several nodes, whose requests add up to at most the
  test's and whose redirects add up to the test's.

Prints one line per test and exits non-zero on the first mismatch.
"""

import json
import sys

import jsonschema
from hdrh.histogram import HdrHistogram

# latency_ms field -> percentile
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99_9": 99.9, "p99_99": 99.99}


def fail(msg):
    print(f"check_json: {msg}", file=sys.stderr)
    sys.exit(1)


def value_at_percentile(h, percentile):
    """The value at a percentile by C hdr_histogram's rule, which respbench follows (as
    redis-benchmark does): the target count is (p / 100) * total rounded half up. The Python
    package computes p * total / 100, whose floating-point rounding can pick the next count at
    the extreme percentiles; the walk over the decoded buckets is the package's own."""
    total = h.get_total_count()
    target = max(int((min(percentile, 100.0) / 100.0) * total + 0.5), 1)
    for item in h.get_recorded_iterator():
        if item.total_count_to_this_value >= target:
            return h.get_highest_equivalent_value(item.value_iterated_to)
    return 0


def close(a, b):
    return abs(a - b) <= 1e-9 + 1e-9 * abs(b)


def check_histogram(name, t):
    """Checks that `t`'s histogram (a test's or a node's) has `requests` values and gives the
    figures of its `latency_ms`; False when it is empty."""
    h = HdrHistogram.decode(t["histogram"]["data"])
    # Requests never answered (abandoned, never sent) are in it too, as lower bounds.
    count = t["requests"] + t.get("latency_lower_bounds", 0)
    if h.get_total_count() != count:
        fail(f"{name}: histogram count {h.get_total_count()} != requests and lower bounds {count}")
    arrivals = t.get("arrivals")
    if arrivals is not None:
        parts = ["completed", "error_replies", "lost", "abandoned", "unsent"]
        if arrivals["due"] != sum(arrivals[k] for k in parts):
            fail(f"{name}: arrivals {arrivals} do not add up")
        if arrivals["completed"] + arrivals["error_replies"] != t["requests"]:
            fail(f"{name}: arrivals {arrivals} are not the requests {t['requests']}")
    if t["requests"] == 0:
        return False
    check_figures(name, "latency_ms", t["latency_ms"], h)
    late = t.get("lateness")
    if late is not None:
        # Every request sent records its lateness once: the answered ones at least, at most
        # those and the ones that went unanswered (lost, abandoned).
        lh = HdrHistogram.decode(late["histogram"]["data"])
        sent_at_least = t["requests"]
        sent_at_most = t["requests"] + t.get("abandoned_requests", 0) + (arrivals or {}).get("lost", 0)
        if not sent_at_least <= lh.get_total_count() <= sent_at_most:
            fail(f"{name}: lateness count {lh.get_total_count()} is not within [{sent_at_least}, {sent_at_most}]")
        check_figures(name, "lateness.ms", late["ms"], lh)
    return True


def check_figures(name, field, lat, h):
    """Checks that the figures `lat` (a `latency_ms` object) are those of histogram `h`."""
    checks = {k: value_at_percentile(h, p) / 1000.0 for k, p in PERCENTILES.items()}
    checks["min"] = h.get_min_value() / 1000.0
    checks["max"] = h.get_max_value() / 1000.0
    for k, want in checks.items():
        if not close(lat[k], want):
            fail(f"{name}: {field}.{k} is {lat[k]} but the decoded histogram says {want}")


def main():
    if len(sys.argv) != 3:
        fail("usage: check_json.py SCHEMA DOCUMENT")
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    with open(sys.argv[2]) as f:
        # NaN and Infinity are not JSON: refuse them instead of reading them as floats.
        doc = json.load(f, parse_constant=lambda c: fail(f"non-JSON constant {c}"))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    if errors:
        fail("schema: " + "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]))
    for t in doc["tests"]:
        name = t["name"]
        if not check_histogram(name, t):
            print(f"{name}: empty")
            continue
        lat = t["latency_ms"]
        nodes = t.get("nodes", [])
        for n in nodes:
            check_histogram(f"{name}: node {n['address']}", n)
        if nodes:
            # Each request counts at the node that answered it; a merge may add a document
            # without nodes, so the nodes' sum is at most the test's.
            served = sum(n["requests"] for n in nodes)
            if served > t["requests"]:
                fail(f"{name}: the nodes answered {served} requests, more than the test's {t['requests']}")
            for kind, count in t["redirects"].items():
                sent = sum(n["redirects"][kind] for n in nodes)
                if sent != count:
                    fail(f"{name}: the nodes sent {sent} {kind} redirects but the test counts {count}")
        on = f", {len(nodes)} nodes" if nodes else ""
        print(f"{name}: {t['requests']} requests, p50 {lat['p50']} ms, p99 {lat['p99']} ms{on}: agree")


if __name__ == "__main__":
    main()
