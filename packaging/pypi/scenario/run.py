"""The Python team's scenario, run by packaging/pypi/check.sh in a fresh venv holding the
`lens-trace` wheel and NeMo Lens (tests/interop/requirements.txt), with PATH limited to the
venv's bin and the system's: no Rust toolchain.

    python run.py WORK_DIR

1. `lens` is the venv's (the wheel's) and no `cargo`/`rustc` is on PATH; `lens --version` works.
2. `lens watch --save WORK_DIR/session.jsonl` on free ports.
3. Two FastAPI services (service.py), set up by NeMo Lens from the environment and exporting
   through NeMo Lens's own OTLP exporter (gRPC) to `lens watch`: `storefront` calls `inventory`
   through aiohttp. One request; both services stop and flush; `lens watch` is stopped (SIGINT).
4. `lens check` on the saved file: the request's trace, whole (both services, the inventory
   SERVER span a child of the storefront CLIENT span), and no error finding; `lens check`'s
   waterfall names the trace and both services.
Exits 0 when every check holds, 1 (with the reason) otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT = 60


def fail(message: str) -> None:
    print(f"python-team scenario: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition: bool, message: str) -> None:
    if not condition:
        fail(message)
    print(f"python-team scenario: ok: {message}")


def start_service(name: str, endpoint: str, downstream: str | None) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ)
    env.update(
        {
            # A NeMo Lens application's settings: NemoLensConfig.from_env() and the OTel SDK's.
            "NEMO_LENS_ENABLED": "1",
            "OTEL_SERVICE_NAME": name,
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        }
    )
    args = [sys.executable, str(HERE / "service.py")]
    if downstream:
        args += ["--downstream", downstream]
    process = subprocess.Popen(
        args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    line = process.stdout.readline()
    if not line.startswith("LISTENING "):
        fail(f"{name} did not start: {line!r}")
    return process, int(line.split()[1])


def stop_service(name: str, process: subprocess.Popen) -> None:
    """Closes its standard input: the server stops and NeMo Lens flushes every span."""
    process.stdin.close()
    try:
        rest = process.stdout.read()
        code = process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        fail(f"{name} did not stop within {TIMEOUT} s")
    check(code == 0 and "FLUSHED" in rest, f"{name} stopped and flushed its spans (exit {code})")


def main() -> int:
    work = Path(sys.argv[1])
    work.mkdir(parents=True, exist_ok=True)
    save = work / "session.jsonl"
    save.unlink(missing_ok=True)

    lens = shutil.which("lens")
    venv_bin = Path(sys.prefix) / "bin"
    check(
        lens is not None and Path(lens).parent == venv_bin,
        f"`lens` on PATH is the wheel's, in the venv ({lens})",
    )
    for tool in ("cargo", "rustc", "rustup"):
        check(shutil.which(tool) is None, f"no `{tool}` on PATH")
    version = subprocess.run([lens, "--version"], capture_output=True, text=True, check=False)
    check(
        version.returncode == 0 and version.stdout.startswith("lens "),
        f"`lens --version`: {version.stdout.splitlines()[:2]}",
    )

    watch = subprocess.Popen(
        [lens, "watch", "--json", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"]
        + ["--save", str(save)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # "lens watch: OTLP/gRPC on ADDR, OTLP/HTTP on http://ADDR/v1/traces, ..."
    first = watch.stderr.readline()
    if "OTLP/gRPC on " not in first:
        watch.kill()
        fail(f"lens watch did not start: {first!r}")
    grpc = first.split("OTLP/gRPC on ")[1].split(",")[0]
    status: list[str] = []
    drain = threading.Thread(target=lambda: status.extend(watch.stderr), daemon=True)
    drain.start()
    endpoint = f"http://{grpc}"
    print(f"python-team scenario: lens watch receives OTLP/gRPC on {grpc}")

    try:
        inventory, inventory_port = start_service("inventory", endpoint, None)
        storefront, storefront_port = start_service(
            "storefront", endpoint, f"http://127.0.0.1:{inventory_port}"
        )
        with urllib.request.urlopen(
            f"http://127.0.0.1:{storefront_port}/work", timeout=TIMEOUT
        ) as response:
            trace_id = json.load(response)["trace_id"]
        print(f"python-team scenario: one request, trace {trace_id}")
        stop_service("storefront", storefront)
        stop_service("inventory", inventory)
    finally:
        # Ctrl-C: lens watch saves and shows everything it accepted, then exits 0.
        watch.send_signal(signal.SIGINT)
        try:
            watched = watch.stdout.read()
            code = watch.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            watch.kill()
            fail(f"lens watch did not stop within {TIMEOUT} s")
    drain.join(timeout=TIMEOUT)
    check(code == 0, f"lens watch stopped on SIGINT: exit {code}; {status[-1:]}")
    shown = [json.loads(line) for line in watched.splitlines() if line.strip()]
    check(
        any(line.get("trace_id") == trace_id for line in shown),
        "lens watch showed the trace",
    )

    checked = subprocess.run(
        [lens, "check", "--json", str(save)], capture_output=True, text=True, check=False
    )
    check(checked.returncode == 0, f"`lens check --json`: exit {checked.returncode} {checked.stderr}")
    lines = [json.loads(line) for line in checked.stdout.splitlines() if line.strip()]
    traces = [line for line in lines if "spans" in line]
    findings = [line for line in lines if "finding" in line]
    check(
        [t["trace_id"] for t in traces] == [trace_id],
        f"the saved file holds the one trace {trace_id}",
    )
    trace = traces[0]
    spans = trace["spans"]
    check(
        set(trace["services"]) == {"storefront", "inventory"} and not trace["partial"],
        f"whole, across both services: {trace['services']}, {len(spans)} spans",
    )
    by_id = {s["span_id"]: s for s in spans}
    roots = [s for s in spans if s["parent_span_id"] is None]
    check(
        len(roots) == 1 and roots[0]["service"] == "storefront" and roots[0]["kind"] == "SERVER",
        "one root: the storefront SERVER span",
    )
    servers = [s for s in spans if s["service"] == "inventory" and s["kind"] == "SERVER"]
    parents = [by_id.get(s["parent_span_id"]) for s in servers]
    check(
        len(servers) == 1
        and parents[0] is not None
        and parents[0]["service"] == "storefront"
        and parents[0]["kind"] == "CLIENT",
        "the inventory SERVER span is a child of the storefront CLIENT span (context carried)",
    )
    errors = [f for f in findings if f.get("severity") == "error"]
    check(not errors, f"no error finding from the doctor: {errors}")

    text = subprocess.run([lens, "check", str(save)], capture_output=True, text=True, check=False)
    check(
        text.returncode == 0
        and trace_id in text.stdout
        and "storefront" in text.stdout
        and "inventory" in text.stdout,
        "`lens check FILE` prints the trace's waterfall",
    )
    print(text.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
