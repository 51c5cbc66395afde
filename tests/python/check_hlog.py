"""Reads a respbench --hlog interval log with HdrHistogram's Python HistogramLogReader.

Usage: check_hlog.py LOG

Prints one line per tag, in order of first appearance: `TAG COUNT INTERVALS`, the total count of
the tag's interval histograms and how many there are. Exits non-zero when the log has no
interval, or an interval does not decode.
"""

import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader


def main():
    if len(sys.argv) != 2:
        print("usage: check_hlog.py LOG", file=sys.stderr)
        sys.exit(1)
    reference = HdrHistogram(1, 3_600_000_000, 2)
    reader = HistogramLogReader(sys.argv[1], reference)
    totals = {}
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        tag = h.get_tag()
        count, intervals = totals.get(tag, (0, 0))
        totals[tag] = (count + h.get_total_count(), intervals + 1)
    reader.close()
    if not totals:
        print("check_hlog: no interval in the log", file=sys.stderr)
        sys.exit(1)
    for tag, (count, intervals) in totals.items():
        print(f"{tag} {count} {intervals}")


if __name__ == "__main__":
    main()
