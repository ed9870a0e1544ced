"""The Python side of the NCCL-bytes and Ray-carrier scenarios of the interop run.

    python oracle.py

Reads one JSON request per line on standard input and answers one JSON line on standard output,
through NeMo Lens's own functions (`nemo.lens.contrib.nccl`, `nemo.lens.contrib.ray`):

  {"op": "serialize", "contexts": [DESC, ...]}
      -> {"bytes_b64": [...]}: serialize_context() with each context current
  {"op": "extract_nccl", "bytes_b64": [...]}
      -> {"contexts": [DESC, ...]}: extract_nccl_context(bytes) described
  {"op": "ray_inject", "calls": [{"parent": DESC, "kwargs": {...}, "carrier": bool}, ...]}
      -> {"calls": [{"json": str, "driver": DESC}, ...]}: inside a real span `driver.dispatch`
         (child of `parent`), the remote call's keyword arguments with `_otel_carrier` =
         inject_ray_context() (or None when `carrier` is false), as json.dumps writes them
  {"op": "ray_call", "json": [str, ...]}
      -> {"calls": [{"worker": DESC, "extracted": DESC, "args": {...}}, ...]}: each JSON object
         is passed as keyword arguments to a `traced_remote_call`-wrapped function, which
         describes its current Context; `extracted` is extract_ray_context(_otel_carrier)
  {"op": "finish", "spans": PATH} -> {"spans": n}: flushes and writes every span, then exits

DESC is the description of `common.describe` / `common.build_context`.
"""

from __future__ import annotations

import base64
import json
import sys

from opentelemetry import context, trace

from nemo.lens.contrib.nccl import extract_nccl_context, serialize_context
from nemo.lens.contrib.ray import extract_ray_context, inject_ray_context, traced_remote_call

import common


def serialize(request: dict) -> dict:
    out = []
    for desc in request["contexts"]:
        token = context.attach(common.build_context(desc))
        try:
            data = serialize_context()
        finally:
            context.detach(token)
        out.append(base64.b64encode(data).decode("ascii"))
    return {"bytes_b64": out}


def extract_nccl(request: dict) -> dict:
    token = context.attach(context.Context())
    try:
        contexts = [
            common.describe(extract_nccl_context(base64.b64decode(b)))
            for b in request["bytes_b64"]
        ]
    finally:
        context.detach(token)
    return {"contexts": contexts}


def ray_inject(request: dict) -> dict:
    tracer = trace.get_tracer("lens-interop.driver")
    out = []
    for call in request["calls"]:
        token = context.attach(common.build_context(call["parent"]))
        try:
            with tracer.start_as_current_span("driver.dispatch"):
                carrier = inject_ray_context() if call.get("carrier", True) else None
                kwargs = dict(call["kwargs"])
                kwargs["_otel_carrier"] = carrier
                out.append({"json": json.dumps(kwargs), "driver": common.describe()})
        finally:
            context.detach(token)
    return {"calls": out}


def generate(**kwargs) -> dict:
    """The remote method: what it sees of its Context, and its arguments."""
    return {"worker": common.describe(), "args": kwargs}


def ray_call(request: dict) -> dict:
    remote = traced_remote_call(generate)
    out = []
    token = context.attach(context.Context())
    try:
        for text in request["json"]:
            kwargs = json.loads(text)
            extracted = common.describe(extract_ray_context(kwargs.get("_otel_carrier")))
            result = remote(**kwargs)
            result["extracted"] = extracted
            out.append(result)
    finally:
        context.detach(token)
    return {"calls": out}


def main() -> int:
    handle, exporter = common.setup("lens-interop-oracle")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request["op"]
        if op == "finish":
            count = common.write_spans(exporter, handle, request["spans"])
            print(json.dumps({"spans": count}), flush=True)
            return 0
        handler = {
            "serialize": serialize,
            "extract_nccl": extract_nccl,
            "ray_inject": ray_inject,
            "ray_call": ray_call,
        }.get(op)
        if handler is None:
            print(json.dumps({"error": f"unknown op {op!r}"}), flush=True)
            continue
        try:
            answer = handler(request)
        except Exception as exc:  # report to the Rust side instead of dying mid-protocol
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
