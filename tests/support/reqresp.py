"""Request/response traffic on keep-alive TCP connections, for the experiment lab tests
(tests/experiment_lab.rs): a server process that can run inside a cgroup, which the lab's
in-process servers cannot, and a client that opens new connections as it goes, so each one is
drawn into an arm.

A request is the size of the response it asks for, 8 bytes big-endian; 0 asks for a stream that
ends when the client closes.

  reqresp.py server
      listens on 0.0.0.0, a free port, which it prints; a thread per connection.
  reqresp.py client HOST PORT SECONDS CONNS INTERVAL PER_CONN SIZES [DOWNLOADS [OUT]]
      CONNS connections at a time, each asking SIZES (comma-separated, in turn; `mix` is the
      rollout guide's 44 x 8 kB, 5 x 50 kB, 1 x 200 kB) every INTERVAL seconds and closing after
      PER_CONN responses for a new one; DOWNLOADS more connections each ask for a stream. Ends
      after SECONDS; every blocking call has a timeout. OUT gets a line per response, its size
      and its seconds from the request sent to the last byte read, as the client timed it.
"""

import socket
import struct
import sys
import threading
import time

MIX = [8000] * 44 + [50000] * 5 + [200000]
CHUNK = b"\0" * 65536


def serve(conn):
    try:
        while True:
            head = b""
            while len(head) < 8:
                got = conn.recv(8 - len(head))
                if not got:
                    return
                head += got
            (n,) = struct.unpack(">Q", head)
            if n == 0:
                while True:
                    conn.sendall(CHUNK)
            while n > 0:
                k = min(n, len(CHUNK))
                conn.sendall(CHUNK[:k])
                n -= k
    except OSError:
        pass
    finally:
        conn.close()


def server():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 0))
    s.listen(1024)
    print(s.getsockname()[1], flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def read_exactly(s, n):
    while n > 0:
        got = s.recv(min(n, 1 << 20))
        if not got:
            raise OSError("closed")
        n -= len(got)


def asker(host, port, end, interval, per_conn, sizes, offset, times):
    i = offset
    while time.time() < end:
        try:
            with socket.create_connection((host, port), timeout=10) as s:
                for _ in range(per_conn):
                    if time.time() >= end:
                        break
                    n = sizes[i % len(sizes)]
                    i += 1
                    t0 = time.monotonic()
                    s.sendall(struct.pack(">Q", n))
                    read_exactly(s, n)
                    times.append((n, time.monotonic() - t0))
                    time.sleep(interval)
        except OSError:
            time.sleep(0.1)


def download(host, port, end):
    try:
        with socket.create_connection((host, port), timeout=10) as s:
            s.sendall(struct.pack(">Q", 0))
            s.settimeout(1)
            while time.time() < end:
                try:
                    if not s.recv(1 << 20):
                        return
                except socket.timeout:
                    pass
    except OSError:
        pass


def client(host, port, seconds, conns, interval, per_conn, sizes, downloads=0, out=None):
    end = time.time() + float(seconds)
    times = []
    sizes = MIX if sizes == "mix" else [int(x) for x in sizes.split(",")]
    threads = [
        threading.Thread(
            target=asker,
            args=(host, int(port), end, float(interval), int(per_conn), sizes, k * 7, times),
        )
        for k in range(int(conns))
    ]
    threads += [threading.Thread(target=download, args=(host, int(port), end)) for _ in range(int(downloads))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(float(seconds) + 20)
    if out:
        with open(out, "w") as f:
            f.writelines(f"{n} {secs:.6f}\n" for n, secs in times)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server()
    else:
        client(*sys.argv[2:])
