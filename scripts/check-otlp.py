#!/usr/bin/env python3
"""Checks an OTLP/JSON file written by `mmsched trace export --otlp-json` with the
OpenTelemetry protobuf definitions (the `opentelemetry-proto` package), not with mmsched's
own code: every line must parse as an ExportTraceServiceRequest or an
ExportMetricsServiceRequest, and every span must start and end within [MIN_NS, MAX_NS].

OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping expects base64
for `bytes` fields; the OTLP specification says receivers must read hex, so the ids are
converted before parsing (and checked to be 16 and 8 bytes).

Usage: check-otlp.py FILE MIN_UNIX_NANOS MAX_UNIX_NANOS
Prints `N spans checked` and exits 0, or names the first problem and exits 1.
"""
import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def hex_ids_to_base64(node):
    """Rewrites OTLP/JSON hex ids into the base64 protobuf's JSON mapping reads."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_FIELDS and isinstance(value, str):
                if value == "":
                    continue
                raw = bytes.fromhex(value)
                if len(raw) != ID_FIELDS[key]:
                    raise ValueError(f"{key} {value!r} is not {ID_FIELDS[key]} bytes")
                node[key] = base64.b64encode(raw).decode()
            else:
                hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            hex_ids_to_base64(item)


def main():
    path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    spans = 0
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            doc = json.loads(line)
            hex_ids_to_base64(doc)
            if "resourceSpans" in doc:
                request = json_format.ParseDict(doc, ExportTraceServiceRequest())
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        for span in ss.spans:
                            spans += 1
                            for name, t in (
                                ("start", span.start_time_unix_nano),
                                ("end", span.end_time_unix_nano),
                            ):
                                if not lo <= t <= hi:
                                    sys.exit(
                                        f"line {number}: span {span.name!r} {name} {t} "
                                        f"is outside the run [{lo}, {hi}]"
                                    )
            elif "resourceMetrics" in doc:
                json_format.ParseDict(doc, ExportMetricsServiceRequest())
            else:
                sys.exit(f"line {number}: neither resourceSpans nor resourceMetrics")
    if spans == 0:
        sys.exit("no spans in the file")
    print(f"{spans} spans checked")


if __name__ == "__main__":
    main()
