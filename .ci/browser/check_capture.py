"""examples/capture.py's page in a real browser: headless Chromium opens, from file URLs, the
picture of the walkthrough over legacy SSE and a 10,000-frame one. Each must log nothing to the
console (a script error, a blocked fetch), run its script to the end, and the first must show the
arrows' colours in a screenshot; the big one must be ready within 2 s.

    python3 .ci/browser/check_capture.py [--screenshot FILE.png]

Without Chromium (Debian's chromium-headless-shell or chromium; .ci/run installs the first when
it can) it says so in one line and passes. Standard library only.
"""
import argparse
import collections
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]
COLOURS = {"request": (0x09, 0x69, 0xda), "response": (0x1a, 0x7f, 0x37), "notification": (0x82, 0x50, 0xdf),
           "HTTP only": (0x6e, 0x77, 0x81), "4xx cross": (0xcf, 0x22, 0x2e)}
READY_MS = 2000     # the bound on opening a 10,000-frame page


def chromium(browser, page, *options):
    """Open `page` once: (its DOM after load, the console's lines, seconds taken)."""
    with tempfile.TemporaryDirectory() as profile:
        started = time.monotonic()
        done = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *options,
                               "file://" + os.path.abspath(page)], capture_output=True, text=True,
                              timeout=120)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    if done.returncode:
        sys.exit(f"!! {browser} failed on {page}: {done.stderr[-2000:]}")
    return done.stdout, console, time.monotonic() - started


def pixels(png):
    """The pixels of an 8-bit RGB or RGBA PNG (what Chromium writes), as (r, g, b) rows."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, data = 8, b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"a PNG of depth {depth}, colour type {colour}: not read here")
        elif kind == b"IDAT":
            data += chunk
        pos += 12 + length
    raw, size = zlib.decompress(data), 3 if colour == 2 else 4
    stride, above, rows = width * size, bytearray(width * size), []
    for y in range(height):     # undo each row's filter (PNG spec, 9.2)
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride) if kind else ():
            left = line[i - size] if i >= size else 0
            up, corner = above[i], above[i - size] if i >= size else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            else:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, size)])
        above = line
    return rows


def near(colour, wanted, slack=24):
    return all(abs(a - b) <= slack for a, b in zip(colour, wanted))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--screenshot", help="keep the walkthrough's screenshot here (a PNG)")
    args = p.parse_args()
    browser = shutil.which("chromium-headless-shell") or shutil.which("chromium")
    if browser is None:
        print("== browser check SKIPPED: neither chromium-headless-shell nor chromium is installed")
        return
    sys.path.insert(0, ROOT)
    from test_mcp_min import CaptureTest    # its 10,000-frame trace, as the size test draws it
    with tempfile.TemporaryDirectory() as tmp:
        sse, big, shot = (os.path.join(tmp, name) for name in ("sse.html", "big.html", "sse.png"))
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "agent_walkthrough.py"), "--transport",
                        "sse", "--picture", sse], check=True, stdout=subprocess.DEVNULL, timeout=60)
        CaptureTest.write_big_trace(os.path.join(tmp, "big.jsonl"))
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "capture.py"),
                        os.path.join(tmp, "big.jsonl"), "-o", big], check=True, stdout=subprocess.DEVNULL)
        failures = []
        for page, tries in ((sse, 1), (big, 2)):    # a timing, on a loaded machine: a second chance
            for _ in range(tries):
                dom, console, seconds = chromium(browser, page, "--dump-dom")
                ready = re.search(r'<body data-ready="(\d+)"', dom)
                name = f"{os.path.basename(page)} ({os.path.getsize(page) / 1e6:.2f} MB)"
                print(f"   {name}: its script done {ready.group(1) + ' ms' if ready else 'NEVER'} from the "
                      f"start, the browser's whole run {seconds:.1f} s, {len(console)} console lines")
                if not ready or int(ready.group(1)) <= READY_MS:
                    break
            failures += [f"{name}: console: {line}" for line in console]
            if not ready:
                failures.append(f"{name}: its script did not run to the end")
            elif int(ready.group(1)) > READY_MS:
                failures.append(f"{name}: ready after {ready.group(1)} ms, over {READY_MS}")
        height = int(re.search(r'<div class="part" style="height: (\d+)px"', open(sse).read()).group(1))
        _, console, _ = chromium(browser, sse, f"--screenshot={shot}", f"--window-size=960,{height + 135}")
        failures += [f"screenshot: console: {line}" for line in console]
        with open(shot, "rb") as f:
            png = f.read()
        if args.screenshot:
            with open(args.screenshot, "wb") as f:
                f.write(png)
        rows = pixels(png)
        counts = collections.Counter(c for row in rows for c in row)
        seen = {name: sum(n for c, n in counts.items() if near(c, colour))
                for name, colour in COLOURS.items()}
        distinct = len(counts)
        print(f"   the screenshot: {len(rows[0])}x{len(rows)}, {distinct} colours; pixels of each arrow's: "
              + ", ".join(f"{name} {count}" for name, count in seen.items()))
        failures += [f"screenshot: hardly any {name} ({count} pixels)" for name, count in seen.items()
                     if count < 20]
        if distinct < 16:
            failures.append(f"screenshot: blank ({distinct} colours)")
    if failures:
        sys.exit("!! browser check failed:\n" + "\n".join(failures))
    print("== browser check: green")


if __name__ == "__main__":
    main()
