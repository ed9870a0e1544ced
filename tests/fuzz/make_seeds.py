#!/usr/bin/env python3
"""Writes the committed seed corpus, tests/fuzz/seeds/<target>/seed-*.

Sources: the public NeMo Lens vectors (../../../shared/vectors/nemo-lens-public.json, when present)
and hand-written hostile inputs. Run it again after changing it; it replaces seeds/.
Usage: python3 tests/fuzz/make_seeds.py
"""
import base64
import hashlib
import json
import pathlib
import shutil
import struct

HERE = pathlib.Path(__file__).resolve().parent
SEEDS = HERE / "seeds"
VECTORS = HERE.parent.parent.parent / "shared" / "vectors" / "nemo-lens-public.json"

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
NAMES = ["traceparent", "tracestate", "baggage", "TraceParent", "TRACESTATE", "Baggage",
         "traceparent-bin", "x-other"]

seeds = {t: set() for t in ["traceparent", "tracestate", "baggage", "extract_headers",
                            "carrier_json", "nccl_frame", "grpc_metadata", "otlp"]}


def b(s):
    return s.encode("utf-8", "surrogatepass") if isinstance(s, str) else s


def fnv1a(data):
    h = 0x811C9DC5
    for x in data:
        h ^= x
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def frame(payload, version=1, reserved=0, length=None, checksum=None):
    length = len(payload) if length is None else length
    checksum = fnv1a(payload) if checksum is None else checksum
    return b"LNCF" + struct.pack("<HHII", version, reserved, length, checksum) + payload


def header_records(pairs):
    """(name, value) pairs as the structured targets read them: selector byte + value, '\\n'."""
    out = []
    for name, value in pairs:
        out.append(bytes([NAMES.index(name)]) + b(value))
    return b"\n".join(out)


def carrier_seeds(carrier):
    """All target shapes for one carrier dict (values: str or list of str)."""
    js = json.dumps(carrier).encode()
    seeds["carrier_json"].add(js)
    seeds["nccl_frame"].add(b"\x01" + js)
    seeds["nccl_frame"].add(b"\x00" + frame(js) + b"\x00" * 16)
    pairs = []
    for k, v in carrier.items():
        if k not in NAMES or not all(isinstance(x, str) for x in (v if isinstance(v, list) else [v])):
            continue
        for line in v if isinstance(v, list) else [v]:
            if "\n" not in line:
                pairs.append((k, line))
    if pairs:
        rec = header_records(pairs)
        seeds["extract_headers"].add(rec)
        seeds["grpc_metadata"].add(rec)
    for k, v in carrier.items():
        lines = v if isinstance(v, list) else [v]
        if not all(isinstance(x, str) for x in lines):
            continue
        if k == "traceparent":
            for line in lines:
                seeds["traceparent"].add(b(line))
        elif k == "tracestate":
            seeds["tracestate"].add(b("\n".join(lines)))
        elif k == "baggage":
            seeds["baggage"].add(b"\x00" + b("\n".join(lines)))
            seeds["baggage"].add(b"\x01" + b("\n".join(lines)))


# --- the public vectors -----------------------------------------------------------------------
if VECTORS.is_file():
    for case in json.loads(VECTORS.read_text())["cases"]:
        inp = case["input"]
        if isinstance(inp.get("carrier"), dict):
            carrier_seeds(inp["carrier"])
        if "bytes_b64" in inp:
            raw = base64.b64decode(inp["bytes_b64"])
            seeds["carrier_json"].add(raw)
            seeds["nccl_frame"].add(b"\x01" + raw)

# --- hand-written hostile inputs --------------------------------------------------------------
hostile_traceparents = [
    TP, TP.upper(), " \t" + TP + " \t", TP + "\n", TP + "-", TP + "-extra",
    "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-what-the-future-holds",
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-+1",
    "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
    "0" * 600, "\u00e9" * 30, "",
]
for tp in hostile_traceparents:
    seeds["traceparent"].add(b(tp))

hostile_tracestates = [
    "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
    "a=1,a=2", "1abc=x,t@1v=y,foo@@bar=z,tenant@abcdefghijklmn=v", "k= leading", "k=v \t",
    ",,,  ,a=1,,", "k=v\nk2=v2", "a=,b=c", "=v", "k=v=w", "K=v",
    ",".join(f"k{i}=v" for i in range(33)),
    "k=" + "x" * 256, "k=" + "x" * 257, "a" * 257 + "=v",
]
for ts in hostile_tracestates:
    seeds["tracestate"].add(b(ts))
    carrier_seeds({"traceparent": TP, "tracestate": ts.split("\n")})

hostile_baggage = [
    "k=v", "k=a=b", "k=%20v%20", "k=a+b", "k+%=v", "k=v;p1;p2=x", "k=v ; p1 ; p2 = x",
    "k=%zz%4", "k=%ff%fe", "a=1,a=2,b=3,a=4", "k=\"quoted\"", "k=v\\", "bad key=v,ok=1",
    "k=v\r\nx-injected: yes", "k=%0D%0Ax-injected:%20yes", "\u00e9=v,k=\u00e9",
    ",".join(f"k{i}=v" for i in range(200)), "k=" + "x" * 8200, "k=" + "x" * 8180,
    "\n".join(["a=1", "b=2", "a=3"]),
]
for bg in hostile_baggage:
    carrier_seeds({"traceparent": TP, "baggage": bg.split("\n")})
    carrier_seeds({"baggage": bg})

hostile_json = [
    b"{}", b"[]", b"null", b"{", b"{\"traceparent\": NaN}", b"{\"a\": Infinity}",
    b"{\"baggage\": \"\\ud800\"}", b"{\"baggage\": \"\\ud83d\\ude00=v\"}", b"\xef\xbb\xbf{}",
    b"[" * 40 + b"]" * 40, b"{\"x\": " + b"[" * 31 + b"]" * 31 + b"}",
    b"{\"x\": " + b"[" * 32 + b"]" * 32 + b"}", b"{\"traceparent\": 1, \"baggage\": [\"k=v\", 2]}",
    b"{\"traceparent\": \"" + b(TP) + b"\", \"traceparent\": \"x\"}", b"{\"a\": 01}",
    b"{\"a\": 1e999}", b"{} trailing", b"{\"Traceparent\": \"" + b(TP) + b"\"}",
    b"{\"baggage\": []}", b"{\"baggage\": {\"k\": \"v\"}}",
]
for js in hostile_json:
    seeds["carrier_json"].add(js)
    seeds["nccl_frame"].add(b"\x01" + js)

good = json.dumps({"traceparent": TP, "tracestate": "congo=t61rcWkgMzE", "baggage": "user=alice"}).encode()
good_frame = frame(good) + b"\x00" * 32
for variant in [
    good_frame, good_frame[:10], good_frame[:16 + len(good) - 1], frame(good, version=2),
    frame(good, version=0xFFFF), frame(good, reserved=1), frame(good, length=0xFFFFFFFF),
    frame(good, checksum=0), bytes([good_frame[0] ^ 1]) + good_frame[1:],
    good_frame[:20] + bytes([good_frame[20] ^ 0x10]) + good_frame[21:],
    b"\x00" * 4096, b"\xff" * 64, good,
]:
    seeds["nccl_frame"].add(b"\x00" + variant)

repeated = [
    [("traceparent", TP), ("traceparent", TP)],
    [("traceparent", TP), ("TraceParent", TP.replace("01", "00", 1))],
    [("traceparent", TP), ("tracestate", "a=1"), ("TRACESTATE", "b=2"), ("tracestate", "a=3")],
    [("baggage", "a=1"), ("Baggage", "b=2"), ("baggage", "a=3")],
    [("traceparent-bin", TP), ("x-other", "y"), ("baggage", "k=v")],
]
for pairs in repeated:
    rec = header_records(pairs)
    seeds["extract_headers"].add(rec)
    seeds["grpc_metadata"].add(rec)

# --- otlp: ExportTraceServiceRequest as OTLP/JSON and as protobuf ------------------------------
def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, wire, payload):
    key = varint((number << 3) | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 1:
        return key + struct.pack("<Q", payload)
    if wire == 5:
        return key + struct.pack("<I", payload)
    return key + varint(len(payload)) + payload


def any_value(v):
    if isinstance(v, bool):
        return field(2, 0, int(v))
    if isinstance(v, int):
        return field(3, 0, v & 0xFFFFFFFFFFFFFFFF)
    if isinstance(v, float):
        return field(4, 1, struct.unpack("<Q", struct.pack("<d", v))[0])
    if isinstance(v, bytes):
        return field(7, 2, v)
    if isinstance(v, list):
        return field(5, 2, b"".join(field(1, 2, any_value(x)) for x in v))
    if isinstance(v, dict):
        return field(6, 2, b"".join(field(1, 2, kv(k, x)) for k, x in v.items()))
    return field(1, 2, b(v))


def kv(key, value):
    return field(1, 2, b(key)) + field(2, 2, any_value(value))


def pb_span(trace_id, span_id, parent=b"", name="op", kind=2, flags=0x301, attrs=None,
            links=(), start=1_700_000_000_000_000_000, end=1_700_000_000_001_000_000):
    out = field(1, 2, trace_id) + field(2, 2, span_id)
    if parent:
        out += field(4, 2, parent)
    out += field(5, 2, b(name)) + field(6, 0, kind) + field(7, 1, start) + field(8, 1, end)
    for k, v in (attrs or {}).items():
        out += field(9, 2, kv(k, v))
    out += field(11, 2, field(1, 1, start) + field(2, 2, b"event") + field(3, 2, kv("n", 1)))
    for t, s in links:
        out += field(13, 2, field(1, 2, t) + field(2, 2, s) + field(6, 5, 0x100))
    out += field(15, 2, field(2, 2, b"boom") + field(3, 0, 2)) + field(16, 5, flags)
    return out


def pb_request(spans, service="svc"):
    resource = field(1, 2, field(1, 2, kv("service.name", service)))
    scope = field(1, 2, field(1, 2, b"scope") + field(2, 2, b"1.0"))
    scope_spans = field(2, 2, scope + b"".join(field(2, 2, sp) for sp in spans))
    return field(1, 2, resource + scope_spans)


T = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
S1, S2 = bytes.fromhex("00f067aa0ba902b7"), bytes.fromhex("00f067aa0ba902b8")
ATTRS = {"http.request.method": "GET", "n": -7, "d": 0.5, "ok": True, "raw": b"\x00\xff",
         "list": ["a", 1, [2.5]], "kv": {"inner": "x"}}
for request in [
    pb_request([pb_span(T, S1, attrs=ATTRS), pb_span(T, S2, parent=S1, links=[(T, S1)])]),
    pb_request([pb_span(T[:15], S1), pb_span(T, b"\x00" * 8), pb_span(T, S2, parent=b"\x01")]),
    pb_request([pb_span(T, S1, parent=S1), pb_span(T, S1, start=2, end=1)]),
    pb_request([pb_span(T, S1, attrs={"deep": [[[[["x"]]]]]})], service=""),
]:
    seeds["otlp"].add(request)

J_SPAN = ('{"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","spanId":"00f067aa0ba902b7","parentSpanId":"",'
          '"name":"GET /","kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":1700000000001000000,'
          '"flags":769,"attributes":[{"key":"s","value":{"stringValue":"v"}},{"key":"i","value":{"intValue":"42"}},'
          '{"key":"n","value":{"intValue":7}},{"key":"d","value":{"doubleValue":"NaN"}},{"key":"e","value":{}},'
          '{"key":"b","value":{"bytesValue":"AP8="}},{"key":"a","value":{"arrayValue":{"values":[{"boolValue":true}]}}},'
          '{"key":"k","value":{"kvlistValue":{"values":[{"key":"x","value":{"doubleValue":1.5}}]}}}],'
          '"events":[{"timeUnixNano":"1","name":"e"}],"links":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736",'
          '"spanId":"00f067aa0ba902b8","flags":256}],"status":{"code":"STATUS_CODE_ERROR","message":"m"},"unknown":[1]}')
J_RES = '{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"scope":{"name":"s"},"spans":[%s]}]}'
for js in [
    '{"resourceSpans":[%s]}' % (J_RES % J_SPAN),
    '{"resourceSpans":[%s]}' % (J_RES % (J_SPAN + "," + J_SPAN.replace("00f067aa0ba902b7", "00f067"))),
    '{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"%s","span_id":"0000000000000001"}]}]}]}' % ("0" * 32),
    '{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":1.5e18,"kind":"SPAN_KIND_CLIENT"}]}]}]}',
    '{"resourceSpans":5}', "{}", "[]", '{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":' * 40,
]:
    seeds["otlp"].add(b(js))

# --- write ------------------------------------------------------------------------------------
if SEEDS.exists():
    shutil.rmtree(SEEDS)
total = 0
for target, items in seeds.items():
    d = SEEDS / target
    d.mkdir(parents=True)
    for item in sorted(items):
        (d / ("seed-" + hashlib.sha1(item).hexdigest()[:16])).write_bytes(item)
    total += len(items)
    print(f"{target}: {len(items)} seeds")
print(f"total: {total}")
