#!/usr/bin/env python3
"""The exporter under the two hostile shapes of issue 27, measured from outside.

Starts `bbrtop export` (the release binary by default) on 127.0.0.1 with basic auth (one user,
a cost-8 bcrypt hash), then:

  flood      CONNS connections at once (64), each request a new connection with a wrong
             password never sent before, while one client scrapes /metrics with the right
             password every 250 ms: prints the scrapes' latencies (p50, p99, max), how many took
             over a second, and how many failed (reset, refused, timed out, not 200).
  slowloris  SLOW connections (500) that send a request line and then one header byte every
             5 s, reconnecting when closed, against --web.max-connections 256; once they are
             up, one scrape a second with the right password: prints how many were answered
             200 and how many failed (reset, closed, timed out).

Loopback only; every loop is bounded by count and time; the exporter and every socket are closed
at the end, even on failure. Usage:

  bench/exporter_abuse.py flood|slowloris [--bin PATH] [--seconds N]
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import base64

USER, PASSWORD = "prom", "scrape-secret"
# bcrypt of PASSWORD at cost 8 (made once with Python's crypt module, libxcrypt's $2b$).
HASH = "$2b$08$eEgSHa0kKBV5fZZ52RSbBu4ycSzSUlrL7tsYJZPThah17zA7LjtY2"


def auth(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def get(port, authorization, timeout=10.0):
    """One GET /metrics on a new connection: the status, or an exception's name."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(
            f"GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: {authorization}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    if not data.startswith(b"HTTP/1.1 "):
        raise ConnectionError("closed without an answer")
    return int(data[9:12])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Exporter:
    """`bbrtop export` with one user; killed (by its PID) on exit."""

    def __init__(self, binary, extra):
        self.dir = tempfile.TemporaryDirectory()
        web = os.path.join(self.dir.name, "web.yml")
        with open(web, "w") as f:
            f.write(f"basic_auth_users:\n  {USER}: '{HASH}'\n")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "export", "--web.listen-address", f"127.0.0.1:{self.port}", "--web.config.file", web,
             "--no-collector.bpf", "--hindsight.window", "0", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                if get(self.port, auth(USER, PASSWORD)) == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.close()
        sys.exit("the exporter did not answer a scrape in 30 s")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def scrape_every(port, period, until, max_scrapes):
    """Scrapes with the right password every `period` until `until`: (latencies, failures)."""
    latencies, failures = [], []
    n = 0
    while time.monotonic() < until and n < max_scrapes:
        t = time.monotonic()
        try:
            status = get(port, auth(USER, PASSWORD))
            if status == 200:
                latencies.append(time.monotonic() - t)
            else:
                failures.append(f"status {status}")
        except OSError as e:
            failures.append(type(e).__name__)
        n += 1
        time.sleep(max(0.0, period - (time.monotonic() - t)))
    return latencies, failures


def flood(binary, seconds, conns):
    with Exporter(binary, []) as ex:
        stop = threading.Event()
        sent = [0] * conns

        def flooder(k):
            i = 0
            while not stop.is_set() and i < 1_000_000:
                try:
                    get(ex.port, auth(USER, f"wrong-{k}-{i}"), timeout=30)
                except OSError:
                    pass
                i += 1
                sent[k] = i

        threads = [threading.Thread(target=flooder, args=(k,), daemon=True) for k in range(conns)]
        for t in threads:
            t.start()
        latencies, failures = scrape_every(ex.port, 0.25, time.monotonic() + seconds, 4 * seconds + 1)
        stop.set()
        for t in threads:
            t.join(35)
    lat = sorted(latencies)
    q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [float("nan")] * 99
    print(f"flood: {conns} connections of unique wrong passwords (cost-8 hash), {seconds} s, "
          f"{sum(sent)} wrong-password requests")
    print(f"  correct scrapes: {len(lat) + len(failures)}, answered 200: {len(lat)}, failed: {len(failures)} "
          f"{sorted(set(failures))}")
    if lat:
        print(f"  latency: p50 {q[49] * 1000:.1f} ms, p99 {q[98] * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms, "
              f"over 1 s: {sum(1 for x in lat if x > 1.0)}")


def slowloris(binary, seconds, slow):
    with Exporter(binary, ["--web.max-connections", "256"]) as ex:
        stop = threading.Event()
        opened = [0]

        def loris():
            """Keeps `slow` connections open, each a byte every 5 s, reopening those closed."""
            socks = []
            last_byte = time.monotonic()
            while not stop.is_set():
                while len(socks) < slow and not stop.is_set():
                    try:
                        s = socket.create_connection(("127.0.0.1", ex.port), timeout=2)
                        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n")
                        s.setblocking(False)
                        socks.append(s)
                        opened[0] += 1
                    except OSError:
                        time.sleep(0.01)
                alive = []
                dribble = time.monotonic() - last_byte >= 5
                for s in socks:
                    try:
                        if s.recv(1) == b"":  # closed by the server
                            s.close()
                            continue
                    except BlockingIOError:
                        pass
                    except OSError:
                        s.close()
                        continue
                    if dribble:
                        try:
                            s.send(b"X")
                        except OSError:
                            s.close()
                            continue
                    alive.append(s)
                if dribble:
                    last_byte = time.monotonic()
                socks = alive
                time.sleep(0.05)
            for s in socks:
                s.close()

        t = threading.Thread(target=loris, daemon=True)
        t.start()
        end = time.monotonic() + 30
        while opened[0] < slow and time.monotonic() < end:
            time.sleep(0.1)
        latencies, failures = scrape_every(ex.port, 1.0, time.monotonic() + seconds, seconds + 1)
        stop.set()
        t.join(10)
    print(f"slowloris: {slow} slow connections ({opened[0]} opened in all) against --web.max-connections 256, "
          f"{seconds} s")
    print(f"  scrapes: {len(latencies) + len(failures)}, answered 200: {len(latencies)}, failed: {len(failures)} "
          f"{sorted(set(failures))}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shape", choices=["flood", "slowloris"])
    p.add_argument("--bin", default="target/release/bbrtop")
    p.add_argument("--seconds", type=int, default=None, help="flood: 60; slowloris: 30")
    p.add_argument("--connections", type=int, default=None, help="flood: 64; slowloris: 500")
    a = p.parse_args()
    if a.shape == "flood":
        flood(a.bin, min(a.seconds or 60, 600), min(a.connections or 64, 256))
    else:
        slowloris(a.bin, min(a.seconds or 30, 600), min(a.connections or 500, 2000))


if __name__ == "__main__":
    main()
