#!/usr/bin/env python3
"""`nxrt partition` on real models: ResNet-50 and Silero VAD (its If bodies included), on the CPU
EP alone and with the SimDevice example EP (a mixed placement with copies between memories).

For each model and EP set it checks, with the expected numbers derived from the ONNX file (the
`onnx` package), not hard-coded:
  - the table: one row per assigned subgraph, every graph (main + each body, by its path) with
    all its nodes (Constant nodes become initializers at load), the op counts, the summary line
    and the fallbacks;
  - --json: the existing keys, each node's inputs/outputs equal to the model's, and the copies
    equal to those the placement implies (a value read on an EP whose memory differs from the
    memory it is in; graph outputs produced in device memory);
  - --dot: balanced braces, one node statement per report node (labelled with its name), one
    cluster per subgraph and per body; rendered with Graphviz `dot -Tsvg` when installed;
  - --html: self-contained (no external URL), every node drawn (data-name), then rendered in
    headless Chromium: --dump-dom (after the page's script ran) holds every node and the
    script's count, and --screenshot is a valid PNG of the window size that is not one colour
    and shows each EP's fill colour (and the red copy marks where there are copies).

  python3 tests/tools/partition_html_check.py --build-dir build --models build/models
Exits non-zero on the first failed check; the screenshots stay in --out (default
BUILD/partition_check).
"""
import argparse
import collections
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx

WINDOW = (1600, 4000)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


# ---- what the ONNX file says ---------------------------------------------------------------


class OnnxGraph:
    def __init__(self, path):
        self.path = path  # "" = main graph; else the body's path, as nxrt names it
        self.nodes = []  # (name, domain, op_type, inputs, outputs), Constant nodes left out
        self.outputs = []


def onnx_graphs(model_path):
    """path -> OnnxGraph, bodies named like nxrt: parent/NODE/ATTRIBUTE (NODE: name or op)."""
    model = onnx.load(model_path)
    graphs = collections.OrderedDict()

    def walk(g, path):
        og = graphs.setdefault(path, OnnxGraph(path))
        og.outputs = [o.name for o in g.output]
        for n in g.node:
            domain = "" if n.domain in ("", "ai.onnx") else n.domain
            if not (n.op_type == "Constant" and domain == ""):
                og.nodes.append((n.name, domain, n.op_type, list(n.input), list(n.output)))
            for a in n.attribute:
                bodies = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
                for body in bodies:
                    walk(body, (path + "/" if path else "") + (n.name or n.op_type) + "/" + a.name)

    walk(model.graph, "")
    return graphs


def op_counts(nodes):
    """ "Conv x53, Relu x49, Add x16": as the table prints them."""
    counts = collections.Counter((d + "." if d else "") + op for _, d, op, _, _ in nodes)
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(op + (" x%d" % c if c > 1 else "") for op, c in ordered)


# ---- running nxrt --------------------------------------------------------------------------


def run_nxrt(nxrt, model, ep_args, extra):
    cmd = [nxrt, "partition", model] + ep_args + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail("%s exited %d:\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


# ---- the table -----------------------------------------------------------------------------


def check_table(text, model, graphs, cpu_only, label):
    lines = text.splitlines()
    check(lines[0] == "model: " + model, "%s: first line %r" % (label, lines[0]))
    check(re.match(r"#\s+graph\s+ep\s+kind\s+device\s+nodes\s+ops$", lines[1]) is not None,
          "%s: header %r" % (label, lines[1]))
    rows, i = [], 2
    while i < len(lines) and not lines[i].startswith("summary:"):
        f = re.split(r"\s{2,}", lines[i].strip())
        check(len(f) == 7, "%s: row %r has %d columns" % (label, lines[i], len(f)))
        rows.append({"graph": "" if f[1] == "main" else f[1], "ep": f[2], "kind": f[3],
                     "device": f[4], "nodes": int(f[5]), "ops": f[6]})
        i += 1
    check(i < len(lines), "%s: no summary line" % label)
    summary, rest = lines[i], lines[i + 1:]
    expected = {p: len(g.nodes) for p, g in graphs.items() if g.nodes}
    per_graph = collections.Counter()
    for r in rows:
        check(r["graph"] in graphs, "%s: unknown graph %r" % (label, r["graph"]))
        check(r["kind"] in ("kernels", "fused"), "%s: kind %r" % (label, r["kind"]))
        per_graph[r["graph"]] += r["nodes"]
    check(dict(per_graph) == expected,
          "%s: nodes per graph differ from the model: %s" %
          (label, {p: (per_graph.get(p), expected.get(p))
                   for p in set(per_graph) | set(expected) if per_graph.get(p) != expected.get(p)}))
    total = sum(expected.values())
    eps = collections.OrderedDict()
    for r in rows:
        n, s = eps.get(r["ep"], (0, 0))
        eps[r["ep"]] = (n + r["nodes"], s + 1)
    want = "summary: " + ", ".join(
        "%s %d nodes in %d subgraph%s" % (ep, n, s, "" if s == 1 else "s")
        for ep, (n, s) in eps.items())
    check(summary == want, "%s: %r, expected %r" % (label, summary, want))
    if cpu_only:
        # The CPU EP runs nodes through its kernels and chains of convolutions as compiled
        # ("fused") groups in a blocked layout (eps/cpu/blocked/).
        check(all(r["ep"] == "CPU" for r in rows), "%s: a subgraph not on the CPU EP" % label)
        check(all(r["device"].startswith("cpu ") for r in rows), "%s: CPU subgraph without a cpu "
              "device" % label)
        check(rest == ["fallbacks: none"], "%s: fallbacks %r" % (label, rest[:3]))
        fallbacks = 0
    else:
        check(set(eps) == {"SimDevice", "CPU"}, "%s: EPs %s, expected SimDevice and CPU" %
              (label, list(eps)))
        m = re.match(r"fallbacks: (\d+)$", rest[0]) if rest else None
        check(m is not None, "%s: no fallback count" % label)
        fallbacks = int(m.group(1))
        check(fallbacks == len(rest) - 1 and fallbacks == eps["CPU"][0],
              "%s: %d fallbacks listed, %d nodes on CPU" % (label, len(rest) - 1, eps["CPU"][0]))
        check(all(" -> CPU: " in line for line in rest[1:]), "%s: a fallback not to CPU" % label)
    return rows, total, fallbacks


# ---- --json --------------------------------------------------------------------------------

HOST_EPS = {"", "CPU"}  # memories: the CPU EP computes in host memory, SimDevice in its own


def expected_copies(graphs, placement):
    """The copies the placement implies: (graph, value, from_ep, to_ep)."""
    copies = []
    for path, g in graphs.items():
        producer = {}
        for name, _, _, _, outs in g.nodes:
            for v in outs:
                if v:
                    producer[v] = placement[(path, name)]
        seen = set()
        for name, _, _, ins, _ in g.nodes:
            to = placement[(path, name)]
            for v in ins:
                if not v:
                    continue
                frm = producer.get(v, "")
                same = (frm in HOST_EPS and to in HOST_EPS) or frm == to
                if not same and (v, to) not in seen:
                    seen.add((v, to))
                    copies.append((path, v, frm, to))
        for v in g.outputs:
            frm = producer.get(v)
            if frm is not None and frm not in HOST_EPS:
                copies.append((path, v, frm, ""))
    return copies


def check_json(text, graphs, label):
    r = json.loads(text)
    check(list(r) == ["model", "subgraphs", "fallbacks", "copies"],
          "%s: keys %s" % (label, list(r)))
    onnx_nodes = {(p, n[0]): n for p, g in graphs.items() for n in g.nodes}
    placement, names = {}, []
    for sg in r["subgraphs"]:
        check(list(sg) == ["graph", "ep_name", "kind", "hardware_devices", "nodes", "stream"],
              "%s: subgraph keys %s" % (label, list(sg)))
        for n in sg["nodes"]:
            check(list(n) == ["name", "domain", "op_type", "inputs", "outputs"],
                  "%s: node keys %s" % (label, list(n)))
            key = (sg["graph"], n["name"])
            check(key in onnx_nodes, "%s: node %s not in the model" % (label, key))
            want = onnx_nodes[key]
            check((n["domain"], n["op_type"], n["inputs"], n["outputs"]) == want[1:],
                  "%s: node %s: %s, the model has %s" %
                  (label, key, (n["op_type"], n["inputs"], n["outputs"]), want[1:]))
            check(key not in placement, "%s: node %s listed twice" % (label, key))
            placement[key] = sg["ep_name"]
            names.append(n["name"])
    check(len(placement) == len(onnx_nodes), "%s: %d of %d nodes placed" %
          (label, len(placement), len(onnx_nodes)))
    for f in r["fallbacks"]:
        check(list(f) == ["graph", "node", "preferred_ep", "reason", "detail", "assigned_ep"],
              "%s: fallback keys %s" % (label, list(f)))
        check(list(f["node"]) == ["name", "domain", "op_type"], "%s: fallback node keys" % label)
    for c in r["copies"]:
        check(list(c) == ["graph", "value", "from_ep", "to_ep", "from_memory", "to_memory"],
              "%s: copy keys %s" % (label, list(c)))
        # One memory per EP here: SimDevice's first device, the host for the rest.
        for ep, memory in ((c["from_ep"], c["from_memory"]), (c["to_ep"], c["to_memory"])):
            want_memory = ("Cpu (cpu 0, host-accessible memory)" if ep in HOST_EPS
                           else "SimDevice (npu 0, device memory)")
            check(memory == want_memory, "%s: copy of %s: %s memory is %s" %
                  (label, c["value"], ep or "host", memory))
    got = [(c["graph"], c["value"], c["from_ep"], c["to_ep"]) for c in r["copies"]]
    want = expected_copies(graphs, placement)
    check(sorted(got) == sorted(want) and len(set(got)) == len(got),
          "%s: copies differ: extra %s, missing %s" %
          (label, sorted(set(got) - set(want))[:5], sorted(set(want) - set(got))[:5]))
    return r, names


# ---- --dot ---------------------------------------------------------------------------------


def check_dot(text, report, graphs, out_dir, stem, label):
    check(text.startswith("digraph ") and text.rstrip().endswith("}"), "%s: not a digraph" % label)
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            check(depth >= 0, "%s: unbalanced '}'" % label)
    check(depth == 0 and not in_string, "%s: unbalanced braces or quotes" % label)
    decl = re.findall(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)"', text, re.M)
    ids = [d[0] for d in decl]
    nodes = sum(len(sg["nodes"]) for sg in report["subgraphs"])
    check(len(ids) == len(set(ids)) == nodes, "%s: %d node statements (%d distinct), %d nodes" %
          (label, len(ids), len(set(ids)), nodes))
    labels = collections.Counter(re.sub(r"\\(.)", r"\1", l.split("\\n")[0]) for _, l in decl)
    names = collections.Counter(n["name"] or n["op_type"] for sg in report["subgraphs"]
                                for n in sg["nodes"])
    check(labels == names, "%s: node labels differ from the report's names" % label)
    clusters = len(re.findall(r"subgraph cluster_s\d+ \{", text))
    bodies = len(re.findall(r"subgraph cluster_g\d+ \{", text))
    body_paths = {sg["graph"] for sg in report["subgraphs"]} - {""}
    check(clusters == len(report["subgraphs"]), "%s: %d subgraph clusters, %d subgraphs" %
          (label, clusters, len(report["subgraphs"])))
    check(bodies == len(body_paths), "%s: %d body clusters, %d bodies" % (label, bodies,
                                                                            len(body_paths)))
    diamonds = len(re.findall(r"^\s*c\d+ \[shape=diamond", text, re.M))
    check((diamonds > 0) == (len(report["copies"]) > 0), "%s: %d copy marks, %d copies" %
          (label, diamonds, len(report["copies"])))
    rendered = "dot not installed: not rendered"
    dot = shutil.which("dot")
    if dot:
        svg = os.path.join(out_dir, stem + ".svg")
        p = subprocess.run([dot, "-Tsvg", "-o", svg, os.path.join(out_dir, stem + ".dot")],
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, "%s: dot -Tsvg failed: %s" % (label, p.stderr[-2000:]))
        drawn = open(svg, encoding="utf-8").read().count('class="node"')
        check(drawn >= nodes, "%s: the SVG has %d nodes, fewer than %d" % (label, drawn, nodes))
        rendered = "dot -Tsvg: %d SVG nodes" % drawn
    return "%d node statements, %d subgraph clusters, %d body clusters, %d copy marks; %s" % (
        len(ids), clusters, bodies, diamonds, rendered)


# ---- --html --------------------------------------------------------------------------------


class PageNodes(html.parser.HTMLParser):
    """The drawn nodes (<g class="node" data-name=...>), the text of #drawn, the EP swatches."""

    def __init__(self):
        super().__init__()
        self.names, self.drawn, self.colors, self.refs = [], "", {}, []
        self._in_drawn = False
        self._swatch = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "g" and "node" in cls:
            self.names.append(a.get("data-name", ""))
        if a.get("id") == "drawn":
            self._in_drawn = True
        if tag == "span" and "swatch" in cls and "background:" in (a.get("style") or ""):
            self._swatch = a["style"].split("background:")[1].split(";")[0].strip()
        for k in ("src", "href", "xlink:href", "action"):
            if a.get(k):
                self.refs.append(a[k])

    def handle_endtag(self, tag):
        if tag == "span":
            self._in_drawn = False

    def handle_data(self, data):
        if self._in_drawn:
            self.drawn += data
        if self._swatch is not None and data.strip():
            self.colors.setdefault(data.strip(), self._swatch)
            self._swatch = None


def parse_page(text):
    p = PageNodes()
    p.feed(text)
    return p


def check_self_contained(text, page, label):
    external = [r for r in page.refs if not r.startswith("#")]
    check(not external, "%s: external references %s" % (label, external[:3]))
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", text)) - {"http://www.w3.org/2000/svg"}
    check(not urls, "%s: URLs in the page: %s" % (label, sorted(urls)[:3]))
    check("<link" not in text and "@import" not in text, "%s: linked resources" % label)


def read_png(path):
    """(width, height, pixels[h][w][channels]) of an 8-bit, non-interlaced PNG."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % path)
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        check(zlib.crc32(kind + body) == crc, "%s: bad CRC in a %r chunk" % (path, kind))
        pos += 12 + length
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    check(ihdr is not None and idat, "%s: no IHDR or IDAT" % path)
    w, h, bit_depth, color_type, _, _, interlace = ihdr
    check(bit_depth == 8 and interlace == 0 and color_type in (0, 2, 4, 6),
          "%s: unsupported PNG (depth %d, color type %d, interlace %d)" %
          (path, bit_depth, color_type, interlace))
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    check(len(raw) == h * (stride + 1),
          "%s: %d bytes of pixel data for %dx%d" % (path, len(raw), w, h))
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.uint8)
    for r in range(h):
        f = raw[r * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, r * (stride + 1) + 1)
        if f == 0:
            cur = line.copy()
        elif f == 1:  # Sub: a running sum per channel
            cur = np.cumsum(line.reshape(w, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif f == 2:  # Up
            cur = line + prev
        elif f in (3, 4):  # Average, Paeth: byte by byte
            x, b, o = line.tolist(), prev.tolist(), [0] * stride
            for i in range(stride):
                a = o[i - bpp] if i >= bpp else 0
                if f == 3:
                    o[i] = (x[i] + ((a + b[i]) >> 1)) & 255
                    continue
                c = b[i - bpp] if i >= bpp else 0
                p = a + b[i] - c
                pa, pb, pc = abs(p - a), abs(p - b[i]), abs(p - c)
                o[i] = (x[i] + (a if pa <= pb and pa <= pc else b[i] if pb <= pc else c)) & 255
            cur = np.array(o, np.uint8)
        else:
            fail("%s: bad filter type %d in row %d" % (path, f, r))
        out[r] = cur
        prev = cur
    pixels = out.reshape(h, w, bpp)
    if bpp < 3:  # gray (+ alpha): as RGB
        pixels = np.repeat(pixels[:, :, :1], 3, axis=2)
    return w, h, pixels[:, :, :3]


def chromium_binary(given):
    for name in ([given] if given else []) + ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(name)
        if path:
            return path
    fail("no Chromium (install Debian's chromium; tools/install_deps.sh does)")


def chromium(browser, args, page_path, profile):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--user-data-dir=" + profile] + args + ["file://" + os.path.abspath(page_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-3000:]))
    return p.stdout


def check_html(text, page_path, report, names, browser, out_dir, stem, label):
    page = parse_page(text)
    check_self_contained(text, page, label)
    check(collections.Counter(page.names) == collections.Counter(names),
          "%s: the page draws %d nodes, the report has %d (missing %s)" %
          (label, len(page.names), len(names),
           list((collections.Counter(names) - collections.Counter(page.names)))[:5]))
    graphs = len({sg["graph"] for sg in report["subgraphs"]} | {""})
    with tempfile.TemporaryDirectory() as profile:
        dom = chromium(browser, ["--dump-dom"], page_path, profile)
        shown = parse_page(dom)
        check(collections.Counter(shown.names) == collections.Counter(names),
              "%s: the DOM in Chromium holds %d of %d nodes" %
              (label, len(shown.names), len(names)))
        want = "drawn: %d nodes in %d graph%s" % (len(names), graphs, "" if graphs == 1 else "s")
        check(shown.drawn.strip() == want, "%s: the page's script says %r, expected %r" %
              (label, shown.drawn.strip(), want))
        png = os.path.join(out_dir, stem + ".png")
        if os.path.exists(png):
            os.remove(png)
        chromium(browser, ["--screenshot=" + png, "--window-size=%d,%d" % WINDOW], page_path,
                 profile)
    check(os.path.exists(png), "%s: Chromium wrote no screenshot" % label)
    w, h, px = read_png(png)
    check((w, h) == WINDOW, "%s: screenshot is %dx%d, expected %dx%d" % ((label, w, h) + WINDOW))
    flat = px.reshape(-1, 3)
    colors = len(np.unique(flat[:: 7], axis=0))
    check(colors >= 16, "%s: the screenshot has %d colours" % (label, colors))

    def count(hex_color):
        rgb = [int(hex_color[i:i + 2], 16) for i in (1, 3, 5)]
        return int(np.all(flat == rgb, axis=1).sum())

    eps = sorted({sg["ep_name"] for sg in report["subgraphs"]})
    seen = {}
    for ep in eps:
        check(ep in shown.colors, "%s: no legend swatch for EP %s" % (label, ep))
        seen[ep] = count(shown.colors[ep])
        check(seen[ep] >= 500, "%s: EP %s's colour %s covers %d pixels of the screenshot" %
              (label, ep, shown.colors[ep], seen[ep]))
    red = count("#ee0000")  # the copy marks (and the legend's)
    return red, ("%d nodes in the page and in Chromium's DOM (%r); screenshot %s %dx%d, "
                 "%d colours, %s") % (
        len(page.names), shown.drawn.strip(), png, w, h, colors,
        ", ".join("%s %d px" % (ep, n) for ep, n in seen.items()) + (", copy marks %d px" % red))


# ---- main ----------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--models", default="build/models")
    ap.add_argument("--out",
                    help="where the DOT, HTML and PNG files go (default BUILD/partition_check)")
    ap.add_argument("--chromium", help="the Chromium binary (default: chromium on PATH)")
    args = ap.parse_args()
    nxrt = os.path.join(args.build_dir, "bin", "nxrt")
    sim = os.path.join(args.build_dir, "lib", "libnxrt_ep_sim_device.so")
    out_dir = args.out or os.path.join(args.build_dir, "partition_check")
    os.makedirs(out_dir, exist_ok=True)
    browser = chromium_binary(args.chromium)
    print("chromium: %s" % subprocess.run([browser, "--version"], capture_output=True,
                                          text=True).stdout.strip())
    cases = [
        ("ResNet-50", "resnet50.onnx", "cpu", []),
        ("ResNet-50", "resnet50.onnx", "simdevice", ["--ep-library", sim, "--ep", "SimDevice"]),
        ("Silero VAD", "silero_vad.onnx", "cpu", []),
        ("Silero VAD", "silero_vad.onnx", "simdevice", ["--ep-library", sim, "--ep", "SimDevice"]),
    ]
    legend_red = {}
    for title, file, eps, ep_args in cases:
        label = "%s (%s)" % (title, "CPU EP" if eps == "cpu" else "SimDevice + CPU")
        model = os.path.join(args.models, file)
        check(os.path.exists(model),
              "%s: no %s (tools/scripts/prepare_test_models.sh)" % (label, model))
        graphs = onnx_graphs(model)
        stem = file[:-5] + "_" + eps
        print("== %s: %s" % (label, model))
        table = run_nxrt(nxrt, model, ep_args, [])
        rows, total, fallbacks = check_table(table, model, graphs, eps == "cpu", label)
        body_rows = len({r["graph"] for r in rows} - {""})
        per_ep = "; ".join("%s %d" % (ep, sum(r["nodes"] for r in rows if r["ep"] == ep))
                           for ep in dict.fromkeys(r["ep"] for r in rows))
        print("  table: %d subgraph(s) over %d graph(s) (main + %d bodies), %d nodes as in the "
              "model (%s), %d fallbacks" % (len(rows), body_rows + 1, body_rows, total, per_ep,
                                            fallbacks))
        if title == "ResNet-50" and eps == "cpu":
            # The convolution trunk is one compiled group (kind fused, blocked layout); the
            # classifier head (Flatten, Gemm) runs on kernels. Together: every op of the model.
            want_ops = op_counts(graphs[""].nodes)
            got = collections.Counter()
            for r in rows:
                for item in r["ops"].split(", "):
                    op, _, count = item.partition(" x")
                    got[op] += int(count) if count else 1
            got_ops = ", ".join(op + (" x%d" % c if c > 1 else "")
                                for op, c in sorted(got.items(), key=lambda kv: (-kv[1], kv[0])))
            check(got_ops == want_ops, "%s: ops %r, expected %r" % (label, got_ops, want_ops))
            fused = [r for r in rows if r["kind"] == "fused"]
            check(len(fused) == 1 and "Conv x53" in fused[0]["ops"],
                  "%s: the convolutions are not one fused group: %r" % (label, rows))
            print("  table: CPU subgraphs %s, ops %s" %
                  (", ".join("%s (%d nodes)" % (r["kind"], r["nodes"]) for r in rows), want_ops))
        dot_path = os.path.join(out_dir, stem + ".dot")
        html_path = os.path.join(out_dir, stem + ".html")
        js = run_nxrt(nxrt, model, ep_args, ["--json", "--dot", dot_path, "--html", html_path])
        report, names = check_json(js, graphs, label)
        between = sum(1 for c in report["copies"] if c["from_ep"] and c["to_ep"])
        print("  json: %d nodes with inputs/outputs as in the model; %d copies as the placement "
              "implies (%d between nodes, %d at graph inputs, %d at graph outputs)" %
              (len(names), len(report["copies"]), between,
               sum(1 for c in report["copies"] if not c["from_ep"]),
               sum(1 for c in report["copies"] if not c["to_ep"])))
        if eps == "cpu":
            check(not report["copies"], "%s: copies on the CPU EP alone" % label)
        else:
            check(between > 0, "%s: a mixed placement without copies between nodes" % label)
        print("  dot: " + check_dot(open(dot_path, encoding="utf-8").read(), report, graphs,
                                    out_dir, stem, label))
        red, summary = check_html(open(html_path, encoding="utf-8").read(), html_path, report,
                                  names, browser, out_dir, stem, label)
        print("  html: " + summary)
        if eps == "cpu":
            legend_red[title] = red  # no copies: only the legend's mark is red
        else:
            check(red >= legend_red[title] + 100, "%s: %d red pixels, %d without copies: the copy "
                  "marks are not drawn" % (label, red, legend_red[title]))
    print("partition views: all checks passed")


if __name__ == "__main__":
    main()
