#!/usr/bin/env python3
"""stdio wire tap + exit watcher: stdio_watch.py LOG [--] CMD ARGS...
Relays client<->server lines, logs them (C> / S<) with timestamps, and logs
  PID <child pid>      the server's pid (child runs in its own session, so the
                       client's SIGTERM to our process group does not reach it)
  EOF <t>              when the client closed our stdin (we then close the child's)
  EXIT <rc> <t>        when the server exited on its own
The wrapper ignores SIGTERM so a client's kill cannot mask a slow server exit;
the harness reads PID/EOF and checks the server is gone within 5 s of EOF."""
import os, signal, subprocess, sys, threading, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
log = open(sys.argv[1], "a", buffering=1)
cmd = sys.argv[3:] if sys.argv[2] == "--" else sys.argv[2:]   # "--" optional (the Inspector CLI eats "--")
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, start_new_session=True)
t0 = time.time()
lock = threading.Lock()
def w(s):
    with lock:
        log.write(s + "\n")
w(f"PID {p.pid}")
def pump(src, dst, tag):
    for line in iter(src.readline, b""):
        w(f"{time.time():.3f} {tag} {line.decode(errors='replace').rstrip()}")
        try:
            dst.write(line); dst.flush()
        except Exception:
            pass
    if tag == "C>":
        w(f"EOF {time.time():.3f}")
    try: dst.close()
    except Exception: pass
a = threading.Thread(target=pump, args=(sys.stdin.buffer, p.stdin, "C>"), daemon=True); a.start()
b = threading.Thread(target=pump, args=(p.stdout, sys.stdout.buffer, "S<"), daemon=True); b.start()
rc = p.wait()
w(f"EXIT {rc} {time.time():.3f}")
b.join(1)
sys.exit(0)
