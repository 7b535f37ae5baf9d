"""A --trace capture drawn as a sequence diagram: one HTML page that fetches nothing.

    python3 mcp_min.py serve --port 8080 --trace=session.jsonl    # use it from any client, then
    python3 examples/capture.py session.jsonl -o capture.html      # open capture.html

It reads the JSON Lines that ``--trace=FILE`` writes, a server's or a client's, and draws the
client and the server as lifelines; between them a lane per HTTP connection (a stream resumed
with Last-Event-ID goes on in the lane it resumes) or the stdio pipe; an arrow per frame,
labelled with the text trace's own words; time downward, idle gaps folded ("... 4.8 s ...");
runs of like notifications folded ("×120"). Hover over an arrow, or click it, for its headers and
JSON. A trace written before records said "conn" still draws: its lanes are guessed.
"""
import argparse
import html
import json
import os
import re
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # mcp_min.py is one up

from mcp_min import _shorten, _summary     # the text trace's own words

ROW, TOP, GAP_H = 24, 12, 26    # px: a frame's row, above the first, a folded gap
GAP = 0.1               # s: a quieter stretch is folded and labelled; a shorter one adds room
FOLD = 5                # like notifications in a row, from this many on, are drawn as one arrow
LANE_W, LANES = 18, 24  # px between lanes; lanes side by side at most (more share columns)
PART = 200              # arrows a part of the page: parts away from the screen are not drawn
CHAR = 6.62             # px: the advance of an 11 px monospace character
DETAIL = 2_000_000      # characters of headers and JSON the page keeps, shared by its frames
STYLES = (("q", "request"), ("r", "response"), ("n", "notification"), ("e", "error"),
          ("h", "HTTP or SSE only"), ("c", "stream closed"))


def read(path, slim=False):
    """The records of a trace; lines that are not one (cut short by a crash) are skipped.
    Slim (what main() draws from): each record cut to what the drawing needs, see Slim."""
    records, at, same = Slim(path) if slim else [], 0, {}
    with open(path, "rb") as f:     # bytes: a line's offset in the file is where it starts
        for line in _lines(f):
            if (record := _record(line)) is not None:
                records.append(_slim(record, at, same) if slim else record)
            at += len(line)
    return records


def _lines(f):
    """The lines of a file opened "rb", split where text mode splits them: at a "\\r" too."""
    for line in f:
        yield from line.splitlines(keepends=True) if b"\r" in line else (line,)


def _record(line):
    """The record one line of a trace holds, or None."""
    try:
        record = json.loads(line.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return record if type(record) is dict and {"t", "dir", "channel", "head"} <= record.keys() else None


class Slim(list):
    """Records read slim from the trace file at `path`. A record read whole holds its headers
    and JSON, 5 to 9 KB a frame in memory (a 100,000-frame trace: over half a gigabyte); a slim one
    keeps its small fields (what the labels, styles, lanes, folds and rounds read), of its
    headers the ones the lanes read, of its message the progress token Guess follows (old traces
    only), and "at": where its line starts in the file. `whole` reads the line again for a
    frame's detail, one frame at a time."""

    def __init__(self, path):
        super().__init__()
        self.path = path


LANE_HEADERS = ("mcp-session-id", "last-event-id")     # the headers lanes() and Guess read


def _slim(record, at, same):
    """`record` slim, its keys and text shared through `same` with the records before it: each
    line's JSON has keys of its own, and a trace says "C→S", "sse", "notification" and a session
    id many thousand times."""
    def share(v):
        return same.setdefault(v, v) if type(v) is str else v
    slim = {share(k): share(v) for k, v in record.items() if k not in ("headers", "data", "message")}
    if headers := {share(k): share(v) for k, v in (record.get("headers") or {}).items()
                   if k.lower() in LANE_HEADERS}:
        slim["headers"] = headers
    # Guess, for a trace without "conn", follows progress tokens: all it reads of a message.
    message = record.get("message")
    params = message.get("params") if type(message) is dict and "conn" not in record else None
    if type(params) is dict and "progressToken" in params:
        slim["message"] = {"params": {"progressToken": params["progressToken"]}}
    slim["at"] = at
    return slim


def whole(records, indices):
    """records[i] for each i of `indices` (rising), with its headers and JSON: a slim record is
    read again from its line, so that no more than one is held whole."""
    if not isinstance(records, Slim):
        yield from map(records.__getitem__, indices)
        return
    with open(records.path, "rb") as f:
        for i in indices:
            f.seek(records[i]["at"])
            yield _record(next(_lines(f), b"")) or records[i]     # (the file changed since: what we kept)


def label(record):
    """What the text trace prints after the time and the arrow."""
    return record["head"] + (f"  {_summary(record)}" if "kind" in record else "")


def style(record):
    kind = record.get("kind")
    if kind == "batch":
        kind = (record.get("items") or [{}])[0].get("kind")
    outcome = record.get("outcome", "")
    if kind == "response":
        return "e" if outcome.startswith("error") or outcome == "ok, isError" else "r"
    if kind in ("request", "notification"):
        return kind[0].replace("r", "q")
    return "c" if record["head"].startswith("(") else "h"


def status(record):
    """The status of an HTTP response frame, else 0."""
    head = record["head"]
    return int(head[:3]) if record["channel"] == "http" and head[:3].isdigit() else 0


CHANGES = ("notifications/tools/list_changed", "notifications/prompts/list_changed",
           "notifications/resources/list_changed", "notifications/resources/updated")


class Guess:
    """Lanes for a trace written before records said "conn", told as a reader of the text trace
    would: each HTTP request opens a connection, and its response head comes back on it (or on
    the oldest one waiting). An SSE event goes to the open stream that carried the request it
    answers; else that its id names ("3-5": stream 3; a new number: the newest stream); else
    that its listen or progress token names; a change notice to the GET stream; anything else
    to the newest stream not a GET's. A note goes to the stream it speaks of that was busy last."""

    def __init__(self):
        self.count, self.waiting, self.open = 0, [], []    # connections; waiting for a head; streams
        self.gets, self.resuming = set(), set()     # the connections of GET requests
        self.carried, self.numbers, self.busy = {}, {}, {}  # request id, stream number -> connection

    def __call__(self, records):
        for n, r in enumerate(records):
            if r["channel"] in ("http", "sse"):
                part = (self.request if r["dir"] == "C→S" else self.head) if r["channel"] == "http" \
                    else self.note if r["head"].startswith("(") else self.event
                r["conn"] = part(r)
                self.busy[r["conn"]] = n

    def answers(self, r):
        return self.carried.get(str(r.get("id"))) if r.get("kind") == "response" else None

    def request(self, r):
        self.count += 1
        headers = {k.lower(): v for k, v in (r.get("headers") or {}).items()}
        if r["head"].startswith("GET "):
            (self.resuming if "last-event-id" in headers else self.gets).add(self.count)
        if (number := headers.get("last-event-id", "").partition("-")[0]).isdigit():
            self.numbers[number] = self.count   # its events come here now
        self.carried.update({str(x.get("id")): self.count for x in [r, *r.get("items", ())]
                             if x.get("kind") == "request"})
        self.waiting.append(self.count)
        return self.count

    def head(self, r):
        mine = self.answers(r)
        conn = mine if mine in self.waiting else self.waiting[0] if self.waiting else self.count
        if conn in self.waiting:
            self.waiting.remove(conn)
        if "(an SSE stream opens)" in r["head"]:
            self.open.append(conn)
        return conn

    def event(self, r):
        number, message = _stream_number(r["head"]), r.get("message")
        params = message.get("params") if type(message) is dict else None
        params = params if type(params) is dict else {}
        why = r.get("why", "")
        named = (self.answers(r), self.numbers.get(number), number and self.open[-1],
                 self.carried.get(why[len("listen #"):]) if why.startswith("listen #") else None,
                 self.carried.get(str(params.get("progressToken"))),
                 next((c for c in self.open if c in self.gets), None) if r.get("method") in CHANGES else None)
        posts = [c for c in self.open if c not in self.gets] or self.open
        conn = next((c for c in named if c in self.open), None) or (posts or [self.count])[-1]
        if number:
            self.numbers[number] = conn
        return conn

    def note(self, r):
        head = r["head"]
        if head.startswith("(the stream resumes") and self.open:
            return self.open[-1]
        named = [c for c in self.open if c in self.gets | self.resuming] if head.startswith("(the GET ") \
            else self.open
        conn = max(named or self.open or [self.count], key=lambda c: self.busy.get(c, -1))
        if ("closed" in head or "ends" in head) and conn in self.open:
            self.open.remove(conn)
        return conn


def _stream_number(head):
    """The stream of an SSE event id "3-5" (a resumable stream's number, then the event's)."""
    match = re.match(r"id: (\d+)-\d+\b", head)
    return match and match.group(1)


class Lane:
    """One connection (or the stdio pipe): the frames it carried and where it is drawn."""

    def __init__(self, key, first):
        self.key, self.first, self.last, self.frames = key, first, first, 0
        self.column = self.after = None     # after: the lane whose stream this one resumes
        self.session = self.request = self.resumes = None


def lanes(records):
    """Each record's lane, and the lanes in the order they opened."""
    by_key, found = {}, []
    for i, r in enumerate(records):
        key = r.get("conn", "stdio" if r["channel"] in ("stdin", "stdout", "memory") else "?")
        key = f"{r['run'] + 1}:{key}" if r["run"] else key
        lane = by_key.get(key)
        if lane is None:
            lane = by_key[key] = Lane(key, i)
            found.append(lane)
        lane.last, lane.frames = i, lane.frames + 1
        headers = {k.lower(): v for k, v in (r.get("headers") or {}).items()}
        if r["channel"] == "http" and r["dir"] == "C→S" and lane.request is None:
            lane.request = r["head"]
            lane.resumes = headers.get("last-event-id")
        lane.session = lane.session or headers.get("mcp-session-id") \
            or (re.findall(r"sessionId=(\w+)", r["head"]) or [None])[0]
        r["lane"] = lane
    streams = {}    # (session, stream number) -> the lane its events went on
    for r in records:
        lane = r["lane"]
        if (number := _stream_number(r["head"])) and not lane.resumes:
            streams.setdefault((lane.session, number), lane)
        if lane.resumes and lane.after is None and (number := lane.resumes.partition("-")[0]).isdigit():
            lane.after = streams.get((lane.session, number))
    return found


def place(found, rows):
    """Columns for the lanes: a lane takes the leftmost column free for a row before its first
    to its last (so that lanes one after the other alternate, each number seen); a resuming lane
    takes the column of the lane it resumes; more than LANES at once share."""
    until = {}      # a lane whose stream is resumed later keeps its column till the resumer ends
    for lane in found:
        first = lane
        while first.after is not None:
            first = first.after
        until[first] = max(until.get(first, 0), rows[lane.last])
    free_from = []      # per column: the row after which it is free
    for lane in found:
        if lane.after is not None and lane.after.column is not None:
            lane.column = lane.after.column
        else:
            lane.column = next((c for c, row in enumerate(free_from) if row < rows[lane.first]),
                               len(free_from) if len(free_from) < LANES else lane.first % LANES)
            if lane.column == len(free_from):
                free_from.append(0)
        free_from[lane.column] = max(free_from[lane.column], until.get(lane, rows[lane.last]) + 1)
    return max(1, len(free_from))


def fold(records):
    """Runs of like notifications (same lane, way and method, in a row): (first, count) each."""
    items, i = [], 0
    while i < len(records):
        j, r = i + 1, records[i]
        if r.get("kind") == "notification":
            like = (r["lane"], r["dir"], r["channel"], r.get("method"), r.get("why"))
            while j < len(records) and records[j].get("kind") == "notification" and like == (
                    records[j]["lane"], records[j]["dir"], records[j]["channel"],
                    records[j].get("method"), records[j].get("why")):
                j += 1
        count = j - i if j - i >= FOLD else 1
        items.append((i, count))
        i += count
    return items


def rounds(records):
    """2026-07-28: a request sent again with the answers its input_required result asked for is
    a round of the first: [(its first request's index, its last response's, what)]. A client's
    trace says which ("round 2 of tools/call #6"); in a server's, the next request with the same
    method and name that answers something is taken for the next round."""
    groups, latest, asked = {}, {}, {}     # first request's index -> [first, last, what, rounds]
    for i, r in enumerate(records):
        if r.get("kind") == "request":
            what, why = f"{r['method']} {r.get('name', '')}".rstrip(), r.get("why", "")
            m = re.match(r"round \d+ of \S+ #(.+)$", why)
            if m and (r["dir"], m.group(1)) in latest:
                key = latest[(r["dir"], m.group(1))]
            elif why.startswith("answering") and asked.get(what):
                key = asked[what].pop(0)
            else:
                key = i
            groups.setdefault(key, [i, i, what, 0])[3] += 1
            latest[(r["dir"], str(r.get("id")))] = key
        elif r.get("kind") == "response":
            key = latest.get(("S→C" if r["dir"] == "C→S" else "C→S", str(r.get("id"))))
            if key is not None:
                groups[key][1] = i
                if r.get("outcome", "").startswith("input required"):
                    asked.setdefault(groups[key][2], []).append(key)
    return [(a, b, (f"{what.split()[0]} #{records[a].get('id')}", f"{n} rounds"))
            for a, b, what, n in groups.values() if n > 1]


def seconds(dt):
    return f"{dt:.2f} s" if dt < 1 else f"{dt:.1f} s" if dt < 60 else f"{dt // 60:.0f} min {dt % 60:.0f} s"


def detail(r, run, budget, headers):
    """What a click shows of an item whose first record, read whole, is `r`, as JSON: its
    headers (an index in `headers`, where each set is kept once: a client sends the same ones
    again and again), body, why, `run` ([count, the last one's t] for a run of like frames); the
    body cut, as text, past `budget` characters."""
    body = r.get("message", r.get("data"))
    shown = {"h": headers.setdefault(json.dumps(r.get("headers") or {}, ensure_ascii=False), len(headers)),
             "b": None if body is None else _shorten(body), "why": r.get("why"), "run": run}
    shown = {k: v for k, v in shown.items() if v is not None}
    if len(text := json.dumps(shown.get("b"), ensure_ascii=False, default=str)) > budget:
        shown["b"] = text[:budget] + " ... (cut: the trace file has it all)"
    return json.dumps(shown, ensure_ascii=False, default=str)


def layout(records, items):
    """Each item's y (and each record's row: its item's number), the gaps folded (y, what they
    say), and the height of it all."""
    rows, ys, gaps, y, t = {}, [], [], TOP, None
    for n, (i, count) in enumerate(items):
        dt = 0.0 if t is None else records[i]["t"] - t
        if dt >= GAP or dt < 0:
            gaps.append((y + 8, f"… {seconds(dt)} …" if dt > 0 else "… another run, its clock from 0 …"))
            y += GAP_H
        y += ROW + round(min(dt * 400, 30) * (dt < GAP))    # a short pause: a little more room
        ys.append(y)
        t = records[i + count - 1]["t"]
        rows.update(dict.fromkeys(range(i, i + count), n))
    return [rows[i] for i in range(len(records))], ys, gaps, y + 30


class Across:
    """Where things go from left to right: the time, the client's lifeline, the lanes, the
    labels, the server's lifeline, what the rounds of a call say."""

    def __init__(self, columns, longest):
        self.time, self.client, self.lane0 = 64, 84, 106
        self.text = self.lane0 + columns * LANE_W
        self.server = round(self.text + max(380, min(longest, 120) * CHAR) + 16)
        self.width = self.server + 260

    def lane(self, lane):
        return self.lane0 + lane.column * LANE_W


def downward(records, found, rows, ys, gaps, at):
    """What runs down the page beside the arrows: (top, bottom, markup) each."""
    e, spans = html.escape, []
    for lane in found:      # a band from a connection's first frame to its last
        x, y0, y1 = at.lane(lane), ys[rows[lane.first]] - 14, ys[rows[lane.last]] + 6
        what = "the stdio pipe" if lane.key == "stdio" else f"connection {lane.key}: {lane.request or '?'}"
        if lane.after is not None:
            what += f" (resumes the stream of connection {lane.after.key})"
            top = ys[rows[lane.after.last]] + 6
            spans.append((top, y0, f'<path class="resume" d="M{x} {top}V{y0}"/>'))
        spans.append((y0 - 12, y1, f'<g class="lane" data-conn="{e(str(lane.key))}"><rect x="{x - 5}" '
                      f'y="{y0}" width="10" height="{y1 - y0}" rx="4"/><text x="{x}" y="{y0 - 2}">'
                      f'{e(str(lane.key))}</text><title>{e(what)}, {lane.frames} frames</title></g>'))
    for y, what in gaps:
        spans.append((y, y + GAP_H, f'<g class="gap"><rect x="0" y="{y}" width="{at.width}" '
                      f'height="{GAP_H - 10}"/><text x="{(at.client + at.server) // 2}" y="{y + 12}">'
                      f'{what}</text></g>'))
    for first, last, (what, count) in rounds(records):
        y0, y1, x = ys[rows[first]], ys[rows[last]], at.server + 14
        spans.append((y0, y1 + 10, f'<g class="rounds"><path d="M{x - 6} {y0}h6V{y1}h-6"/><text '
                      f'x="{x + 6}" y="{(y0 + y1) // 2 - 3}">{e(what)}<tspan x="{x + 6}" dy="13">{count}'
                      '</tspan></text></g>'))
    return spans


def arrow(r, n, count, y, at):
    """An item's arrow: its time, line, knot on its lane, label, and a cross on a 4xx/5xx.
    10,000 of them must stay under 5 MB: coordinates are the row's, no attribute is a default."""
    e, s, bad = html.escape, style(r), status(r) >= 400
    a, b = (at.client, at.server) if r["dir"] == "C→S" else (at.server, at.client)
    more = f'<tspan class="x"> ×{count}</tspan>' if count > 1 else ""
    run = f' data-n="{count}"' if count > 1 else ""
    mark = f'<path class="bad" d="M{b + 4 if b == at.client else b - 12} -11l8 8m0 -8l-8 8"/>' if bad else ""
    return (f'<g class="f {s}{" run" * (count > 1)}{" bad" * bad}" data-i="{n}"{run} '
            f'data-dir="{e(r["dir"])}" data-conn="{e(str(r["lane"].key))}" transform="translate(0 {y})">'
            f'<text class="t" x="{at.time}" y="4">{r["t"]:.3f}s</text><path d="M{a} 0H{b}"/>'
            f'<circle cx="{at.lane(r["lane"])}"/><text class="l" x="{at.text}" y="-5">{e(label(r))}{more}'
            f'</text>{mark}</g>')


def draw(records, title):
    """The page, as text."""
    return "".join(pieces(records, title))


def pieces(records, title):
    """The page, piece by piece: main() writes each as it comes, so that the page is never whole
    in memory (at 100,000 frames it is 40 MB, and as Python text twice that: its arrows say "→")."""
    run = 0
    for before, r in zip([None, *records], records):
        # --trace=FILE appends: a later run of a program has a clock and connections of its own
        run += before is not None and r["t"] < before["t"]
        r["run"] = run
    if not any("conn" in r for r in records):
        Guess()(records)
        title += " (lanes guessed: this trace does not say which connection carried each frame)"
    found, items = lanes(records), fold(records)
    rows, ys, gaps, height = layout(records, items)
    at = Across(place(found, rows), max((len(label(records[i])) for i, _ in items), default=0) + 6)
    spans = downward(records, found, rows, ys, gaps, at)
    legend = "".join(f'<span><svg width="40" height="12"><path class="{s}" d="M1 6H39"/></svg>{name}</span>'
                     for s, name in STYLES)
    heads = (f'<svg width="{at.width}" height="30"><defs>' + "".join(
        f'<marker id="m{s}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9" '
        f'markerUnits="userSpaceOnUse" orient="auto"><path d="M0 0L10 5L0 10z" class="k{s}"/></marker>'
        for s, _ in STYLES) + '</defs><g class="who">' + "".join(
        f'<rect x="{x - 36}" y="4" width="72" height="22" rx="4"/><text x="{x}" y="19">{who}</text>'
        for x, who in ((at.client, "Client"), (at.server, "Server"))) + "</g></svg>")
    span = sum(max(0, b["t"] - a["t"]) for a, b in zip(records, records[1:]))
    about = (f"{len(records)} frames, {sum(1 for x in found if x.key != 'stdio')} connections"
             f"{', the stdio pipe' * any(x.key == 'stdio' for x in found)}, {seconds(span)}")
    fields = {"title": html.escape(title), "about": html.escape(about), "legend": legend, "heads": heads,
              "script": SCRIPT}
    before, rest = PAGE.split("{parts}")    # PAGE in three around its parts and its frames,
    between, after = rest.split("{frames}")     # each piece formatted alone
    yield before.format(**fields)
    for start in range(0, len(items), PART):
        # a part is drawn only near the screen (content-visibility): a big page opens fast
        top = 0 if start == 0 else ys[start] - ROW + 6
        bottom = height if start + PART >= len(items) else ys[start + PART] - ROW + 6
        yield ("\n" * (start > 0) + f'<div class="part" style="height: {bottom - top}px"><svg '
               f'width="{at.width}" height="{bottom - top}" viewBox="0 {top} {at.width} {bottom - top}">'
               + "".join(m for y0, y1, m in spans if y0 < bottom and y1 > top)
               + f'<path class="life" d="M{at.client} {top}V{bottom}M{at.server} {top}V{bottom}"/>'
               + "".join(arrow(records[i], n, count, ys[n], at)
                         for n, (i, count) in enumerate(items[start:start + PART], start))
               + "</svg></div>")
    yield between.format(**fields)
    # The frames' details, in JSON that the script parses: the headers first, each set once,
    # so all details are built before the first is written (~150 bytes each: 15 MB at 100,000).
    budget, headers = max(300, min(20_000, DETAIL // max(1, len(items)))), {}
    data = [detail(r, [count, records[i + count - 1]["t"]] if count > 1 else None, budget, headers)
            for r, (i, count) in zip(whole(records, (i for i, _ in items)), items)]
    yield ('{"headers": [' + ",".join(headers) + '], "frames": [').replace("<", "\\u003c")
    for start in range(0, len(data), PART):
        yield ("," * (start > 0) + ",".join(data[start:start + PART])).replace("<", "\\u003c")
    yield "]}" + after.format(**fields)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<style>
body {{ margin: 0; font: 13px system-ui, sans-serif; color: #1f2328; }}
header {{ padding: 8px 12px 4px; }} h1 {{ font-size: 16px; margin: 0 0 2px; }}
header p {{ margin: 0 0 6px; color: #57606a; }}
.legend {{ display: flex; flex-wrap: wrap; gap: 2px 12px; font-size: 12px; }}
.legend span {{ display: inline-flex; align-items: center; gap: 5px; }}
#heads {{ position: sticky; top: 0; background: #fff; border-bottom: 1px solid #d0d7de; z-index: 1; }}
.who rect {{ fill: #f6f8fa; stroke: #57606a; }} .who text {{ text-anchor: middle; font-weight: 600; }}
svg text {{ font: 11px ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre; }}
.who text {{ font-family: system-ui, sans-serif; }}
path {{ fill: none; stroke-width: 1.6; }}
.life {{ stroke: #57606a; stroke-width: 1; }}
.lane rect {{ fill: #eaeef2; stroke: #afb8c1; }}
.lane text {{ font-size: 9px; text-anchor: middle; fill: #57606a; }}
.lane.hi rect {{ fill: #ddf4ff; stroke: #0969da; }}
.resume {{ stroke: #afb8c1; stroke-dasharray: 2 3; }}
.gap rect {{ fill: #fff; stroke: #d0d7de; stroke-dasharray: 4 3; }}
.gap text {{ fill: #57606a; text-anchor: middle; }}
.rounds path {{ stroke: #57606a; }} .rounds text {{ fill: #57606a; }}
.f {{ cursor: pointer; pointer-events: bounding-box; }}
.f .t {{ text-anchor: end; fill: #57606a; }} .f circle {{ r: 3.5px; stroke: #fff; stroke-width: 1.5; }}
.f:hover .l, .f.pin .l {{ font-weight: 700; }} .f:hover path, .f.pin path {{ stroke-width: 3; }}
.f.pin .l {{ text-decoration: underline; }}
.q path, path.q {{ stroke: #0969da; }} .q circle, .kq {{ fill: #0969da; }} .q path {{ marker-end: url(#mq); }}
.r path, path.r {{ stroke: #1a7f37; }} .r circle, .kr {{ fill: #1a7f37; }} .r path {{ marker-end: url(#mr); }}
.n path, path.n {{ stroke: #8250df; stroke-dasharray: 7 4; }} .n circle, .kn {{ fill: #8250df; }}
.n path {{ marker-end: url(#mn); }}
.e path, path.e {{ stroke: #cf222e; }} .e circle, .ke {{ fill: #cf222e; }} .e path {{ marker-end: url(#me); }}
.h path, path.h {{ stroke: #6e7781; stroke-width: 1; }} .h circle, .kh {{ fill: #6e7781; }}
.h path {{ marker-end: url(#mh); }}
.c path, path.c {{ stroke: #8c959f; stroke-width: 1; stroke-dasharray: 2 3; }}
.c circle, .kc {{ fill: #8c959f; }}
.c path {{ marker-end: url(#mc); }}
path.bad, .f path.bad {{ stroke: #cf222e; stroke-width: 2.2; stroke-dasharray: none; marker-end: none; }}
.f.bad .l {{ fill: #cf222e; }} .f.run path {{ stroke-width: 4; }} .x {{ font-weight: 700; }}
.part {{ content-visibility: auto; }} .part svg {{ display: block; }}
#detail:empty {{ display: none; }}
#detail {{ position: fixed; right: 8px; bottom: 8px; width: min(520px, 45vw); max-height: 60vh;
  overflow: auto; margin: 0; padding: 8px 10px; background: #f6f8fa; border: 1px solid #d0d7de;
  border-radius: 6px;
  font: 12px ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap; word-break: break-all;
  box-shadow: 0 2px 8px #0002; }}
</style></head>
<body>
<header><h1>{title}</h1><p>{about}. Time runs downward; hover over an arrow, or click it to keep it,
for its headers and JSON.</p><div class="legend">{legend}
<span><svg width="12" height="12"><path class="bad" d="M2 2l8 8m0 -8l-8 8"/></svg>HTTP 4xx/5xx</span>
<span><svg width="40" height="12"><path class="n" d="M1 6H39" style="stroke-width: 4"/></svg>
a run: ×count</span>
</div></header>
<div id="heads">{heads}</div>
<div id="d">
{parts}
</div>
<pre id="detail"></pre>
<script type="application/json" id="frames">{frames}</script>
<script>{script}</script>
</body></html>
"""

SCRIPT = """
"use strict";
const {headers, frames} = JSON.parse(document.getElementById("frames").textContent);
const box = document.getElementById("detail");
let pinned = null, lit = null;
function show(g) {
  const f = frames[+g.dataset.i], lines = [];
  const time = g.querySelector(".t").textContent, text = g.querySelector(".l").textContent;
  const conn = g.dataset.conn === "stdio" ? "the stdio pipe" : "connection " + g.dataset.conn;
  lines.push(time + " " + g.dataset.dir + "  " + conn, text);
  if (f.run) lines.push(f.run[0] + " like frames, the last at " + f.run[1].toFixed(3) + "s; the first:");
  if (f.why) lines.push("why: " + f.why);
  const shown = Object.entries(headers[f.h]);
  if (shown.length) lines.push("", ...shown.map(([k, v]) => k + ": " + v));
  if (f.b != null) lines.push("", typeof f.b === "string" ? f.b : JSON.stringify(f.b, null, 2));
  box.textContent = lines.join("\\n");
  for (const band of lit || []) band.classList.remove("hi");
  lit = document.querySelectorAll('.lane[data-conn="' + CSS.escape(g.dataset.conn) + '"]');
  for (const band of lit) band.classList.add("hi");
}
const drawing = document.getElementById("d");   // every part's arrows
drawing.addEventListener("mouseover", e => {
  const g = e.target.closest(".f");
  if (g && !pinned) show(g);
});
drawing.addEventListener("click", e => {
  const g = e.target.closest(".f");
  if (pinned) pinned.classList.remove("pin");
  pinned = g && g !== pinned ? g : null;
  if (pinned) { pinned.classList.add("pin"); show(pinned); }
});
document.body.dataset.ready = Math.round(performance.now());    // ms from the start: a check reads it
"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="the JSON Lines of --trace=FILE (a server's or a client's)")
    p.add_argument("-o", "--output", default="capture.html", help="the page to write (capture.html)")
    args = p.parse_args(argv)
    records = read(args.trace, slim=True)
    if not records:
        sys.exit(f"capture.py: {args.trace} holds no trace records")
    size = 0
    with open(args.output, "wb") as f:
        for piece in pieces(records, f"MCP capture: {os.path.basename(args.trace)}"):
            size += f.write(piece.encode("utf-8", "backslashreplace"))   # a lone surrogate shown, not a crash
    print(f"{args.output}: {len(records)} frames, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
