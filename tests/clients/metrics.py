"""Scrapes a Shoal metrics endpoint and parses it with the Prometheus client library's
OpenMetrics parser, which raises on malformed text. Prints the content type, then one
sample per line: `type name label=value,... value`."""

import sys
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families

with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
    content_type = r.headers.get("Content-Type", "")
    text = r.read().decode()
print("content-type", content_type)
for family in text_string_to_metric_families(text):
    for s in family.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        print(f"{family.type} {s.name} {labels or '-'} {s.value}")
