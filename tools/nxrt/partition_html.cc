// `nxrt partition --html FILE`: one self-contained page (inline CSS, SVG and JavaScript, no
// external URL) with the placement summary and every graph drawn in layers. The layout is
// done here: a node's row is its topological depth (longest path from the graph's sources), the
// order within a row comes from a few barycenter sweeps, values are arrows (those that skip rows
// go around the rows between), copies between memories are red diamonds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nxrt/ep_args.h"
#include "nxrt/partition_view.h"

namespace nxrt::cli {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// Characters (not bytes) of UTF-8 text.
size_t Chars(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// `s` in at most `max` characters: its tail behind an ellipsis when longer (the tail of a node
// name is its most telling part: ".../rnn_1/Unsqueeze_6").
std::string Tail(const std::string& s, size_t max) {
  const size_t n = Chars(s);
  if (n <= max) return s;
  size_t skip = n - (max - 1), i = 0;
  while (i < s.size() && skip > 0) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    --skip;
  }
  return "\xE2\x80\xA6" + s.substr(i);  // U+2026
}

// Box and grid, in pixels. Text is 11px monospace (about 6.6px a character).
constexpr double kBoxW = 220, kBoxH = 40, kGapX = 26, kGapY = 46, kMargin = 30;
constexpr double kColW = kBoxW + kGapX, kRowH = kBoxH + kGapY;
constexpr size_t kLineChars = 31;
// Tables longer than this start folded.
constexpr size_t kFoldRows = 25;

struct Placed {
  size_t layer = 0;
  double pos = 0;       // order in its row
  double x = 0, y = 0;  // top-left corner of its box
};

// Where the arrow of `value` meets node `n`'s box: arrow heads are spread over the top edge in
// the order of the node's inputs that have an arrow (`drawn`).
double AttachX(const ViewNode& n, const Placed& p, const std::set<std::string>& drawn,
               const std::string& value) {
  std::vector<std::string> ins;
  for (const std::string& v : n.inputs)
    if (drawn.count(v) && std::find(ins.begin(), ins.end(), v) == ins.end()) ins.push_back(v);
  const double cx = p.x + kBoxW / 2;
  if (ins.size() <= 1) return cx;
  const size_t k = static_cast<size_t>(std::find(ins.begin(), ins.end(), value) - ins.begin());
  const double step = std::min(28.0, (kBoxW - 24) / static_cast<double>(ins.size() - 1));
  return cx + (static_cast<double>(k) - static_cast<double>(ins.size() - 1) / 2) * step;
}

std::string Diamond(double x, double y, const std::string& title) {
  return "<g class=\"copy\"><title>" + HtmlEscape(title) + "</title><polygon points=\"" + Num(x) + "," +
         Num(y - 7) + " " + Num(x + 7) + "," + Num(y) + " " + Num(x) + "," + Num(y + 7) + " " +
         Num(x - 7) + "," + Num(y) + "\"/></g>\n";
}

std::string CopyTitle(const std::string& value, const std::string& from, const std::string& to) {
  return "copy " + value + ": " + (from.empty() ? "host" : from) + " \xE2\x86\x92 " +
         (to.empty() ? "host" : to);
}

// One graph's picture: nodes in rows by depth, arrows, copies.
std::string DrawGraph(const ViewModel& m, const ViewGraph& g) {
  const size_t n = g.nodes.size();
  std::map<size_t, size_t> local;  // node index -> position in g.nodes
  for (size_t i = 0; i < n; ++i) local[g.nodes[i]] = i;
  std::vector<std::vector<size_t>> preds(n), succs(n);
  std::vector<std::set<std::string>> drawn(n);  // per node: the inputs with an arrow
  for (const ViewEdge& e : g.edges) {
    preds[local[e.to]].push_back(local[e.from]);
    succs[local[e.from]].push_back(local[e.to]);
    drawn[local[e.to]].insert(e.value);
  }
  for (const ViewBoundaryCopy& c : g.copies_in) drawn[local[c.node]].insert(c.value);
  // Rows: longest path from a source (Kahn's order); nodes no EP runs (edges unknown) last.
  std::vector<Placed> p(n);
  std::vector<size_t> indegree(n, 0), queue;
  for (size_t i = 0; i < n; ++i) indegree[i] = preds[i].size();
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) queue.push_back(i);
  for (size_t q = 0; q < queue.size(); ++q) {
    const size_t i = queue[q];
    for (size_t s : succs[i]) {
      p[s].layer = std::max(p[s].layer, p[i].layer + 1);
      if (--indegree[s] == 0) queue.push_back(s);
    }
  }
  // A source (it reads only graph inputs, initializers or outer values) goes to the row just
  // above its first reader rather than to the top: shape and slice side chains then sit next to
  // the nodes they feed instead of widening the first row.
  for (size_t i = 0; i < n; ++i) {
    if (!preds[i].empty() || succs[i].empty()) continue;
    size_t first = p[succs[i].front()].layer;
    for (size_t s : succs[i]) first = std::min(first, p[s].layer);
    p[i].layer = first - 1;  // readers are at least one row down
  }
  size_t layers = 0;
  for (size_t i = 0; i < n; ++i)
    if (!m.nodes[g.nodes[i]].ep.empty()) layers = std::max(layers, p[i].layer + 1);
  bool unplaced = false;
  for (size_t i = 0; i < n; ++i) {
    if (m.nodes[g.nodes[i]].ep.empty()) {
      p[i].layer = layers;
      unplaced = true;
    }
  }
  if (unplaced) ++layers;
  std::vector<std::vector<size_t>> rows(std::max<size_t>(layers, 1));
  for (size_t i = 0; i < n; ++i) rows[p[i].layer].push_back(i);  // report order to start
  auto center = [&](std::vector<size_t>& row) {
    for (size_t k = 0; k < row.size(); ++k)
      p[row[k]].pos = static_cast<double>(k) - static_cast<double>(row.size() - 1) / 2;
  };
  for (auto& row : rows) center(row);
  // Barycenter sweeps: down by predecessors, up by successors.
  auto sweep = [&](size_t r, const std::vector<std::vector<size_t>>& nb) {
    std::vector<size_t>& row = rows[r];
    std::vector<std::pair<double, size_t>> keyed;
    for (size_t i : row) {
      double sum = 0;
      for (size_t j : nb[i]) sum += p[j].pos;
      keyed.push_back({nb[i].empty() ? p[i].pos : sum / static_cast<double>(nb[i].size()), i});
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < row.size(); ++k) row[k] = keyed[k].second;
    center(row);
  };
  for (int round = 0; round < 3; ++round) {
    for (size_t r = 1; r < rows.size(); ++r) sweep(r, preds);
    if (round == 2) break;
    for (size_t r = rows.size(); r-- > 1;) sweep(r - 1, succs);
  }
  size_t widest = 1;
  for (const auto& row : rows) widest = std::max(widest, row.size());
  const double side = kColW / 2;  // room for arrows going around rows
  const double width = static_cast<double>(widest) * kColW + 2 * kMargin + 2 * side;
  const double height = static_cast<double>(rows.size()) * kRowH + 2 * kMargin;
  const double mid = width / 2;
  for (size_t i = 0; i < n; ++i) {
    p[i].x = mid + p[i].pos * kColW - kBoxW / 2;
    p[i].y = kMargin + static_cast<double>(p[i].layer) * kRowH;
  }
  // Per row: the leftmost and rightmost box edge, for arrows that skip rows.
  std::vector<double> row_min(rows.size(), mid), row_max(rows.size(), mid);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i : rows[r]) {
      row_min[r] = std::min(row_min[r], p[i].x);
      row_max[r] = std::max(row_max[r], p[i].x + kBoxW);
    }
  }

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width) +
                    "\" height=\"" + Num(height) + "\" viewBox=\"0 0 " + Num(width) + " " +
                    Num(height) + "\">\n";
  // Arrows first (under the boxes).
  size_t lane = 0;
  for (const ViewEdge& e : g.edges) {
    const Placed& a = p[local[e.from]];
    const Placed& b = p[local[e.to]];
    const double x1 = a.x + kBoxW / 2, y1 = a.y + kBoxH;
    const double x2 = AttachX(m.nodes[e.to], b, drawn[local[e.to]], e.value), y2 = b.y;
    std::string d;
    double mx = (x1 + x2) / 2, my = (y1 + y2) / 2;
    // A straight run between rows hits a box of a row it skips? Then go around those rows.
    bool blocked = false;
    double lo = 1e18, hi = -1e18;
    for (size_t r = a.layer + 1; r < b.layer; ++r) {
      const double t =
          (static_cast<double>(r - a.layer) * kRowH + kBoxH / 2 - kBoxH) / std::max(1.0, y2 - y1);
      const double x = x1 + (x2 - x1) * std::clamp(t, 0.0, 1.0);
      for (size_t i : rows[r])
        if (x > p[i].x - 6 && x < p[i].x + kBoxW + 6) blocked = true;
      lo = std::min(lo, row_min[r]);
      hi = std::max(hi, row_max[r]);
    }
    if (!blocked) {
      const double dy = std::min(kGapY, (y2 - y1) / 2);
      d = "M" + Num(x1) + "," + Num(y1) + " C" + Num(x1) + "," + Num(y1 + dy) + " " + Num(x2) +
          "," + Num(y2 - dy) + " " + Num(x2) + "," + Num(y2);
    } else {
      const double offset = 14 + 7 * static_cast<double>(lane++ % 4);
      const double left = lo - offset, right = hi + offset;
      const double lx = std::abs(left - mx) < std::abs(right - mx) ? left : right;
      const double ya = y1 + kGapY / 2, yb = y2 - kGapY / 2;
      d = "M" + Num(x1) + "," + Num(y1) + " C" + Num(x1) + "," + Num(ya) + " " + Num(lx) + "," +
          Num(y1) + " " + Num(lx) + "," + Num(ya + 12) + " L" + Num(lx) + "," + Num(yb - 12) +
          " C" + Num(lx) + "," + Num(y2) + " " + Num(x2) + "," + Num(yb) + " " + Num(x2) + "," +
          Num(y2);
      mx = lx;
    }
    svg += "<path class=\"edge" + std::string(e.copy ? " copied" : "") + "\" data-from=\"n" +
           std::to_string(e.from) + "\" data-to=\"n" + std::to_string(e.to) + "\" d=\"" + d +
           "\"><title>" + HtmlEscape(e.value) + "</title></path>\n";
    if (e.copy) svg += Diamond(mx, my, CopyTitle(e.value, m.nodes[e.from].ep, m.nodes[e.to].ep));
  }
  // Boundary copies: a diamond above the reading node, or below the producing one.
  for (const ViewBoundaryCopy& c : g.copies_in) {
    const Placed& b = p[local[c.node]];
    const double x = AttachX(m.nodes[c.node], b, drawn[local[c.node]], c.value);
    svg += "<path class=\"edge copied\" d=\"M" + Num(x) + "," + Num(b.y - 18) + " L" + Num(x) +
           "," + Num(b.y) + "\"/>\n";
    svg += Diamond(x, b.y - 24, CopyTitle(c.value, c.from_ep, c.to_ep) + " (graph input)");
  }
  std::map<size_t, size_t> outs;
  for (const ViewBoundaryCopy& c : g.copies_out) {
    const Placed& a = p[local[c.node]];
    const double x = a.x + kBoxW / 2 + 18 * static_cast<double>(outs[c.node]++);
    svg += "<path class=\"edge copied\" d=\"M" + Num(x) + "," + Num(a.y + kBoxH) + " L" + Num(x) +
           "," + Num(a.y + kBoxH + 16) + "\"/>\n";
    svg += Diamond(x, a.y + kBoxH + 22, CopyTitle(c.value, c.from_ep, c.to_ep) + " (graph output)");
  }
  // The boxes.
  for (size_t i = 0; i < n; ++i) {
    const size_t id = g.nodes[i];
    const ViewNode& v = m.nodes[id];
    std::string ins, outs_text;
    for (const std::string& s : v.inputs) ins += (ins.empty() ? "" : ", ") + s;
    for (const std::string& s : v.outputs) outs_text += (outs_text.empty() ? "" : ", ") + s;
    const std::string op = (v.domain.empty() ? "" : v.domain + ".") + v.op_type;
    const std::string ep = v.ep.empty() ? "no EP" : v.ep;
    std::string title = v.label + "\nop: " + op + "\nEP: " + ep +
                        (v.kind.empty() ? "" : " (" + v.kind + ")") + "\ndevice: " + v.devices;
    if (v.subgraph >= 0) title += "\nsubgraph: #" + std::to_string(v.subgraph);
    if (!ins.empty()) title += "\ninputs: " + ins;
    if (!outs_text.empty()) title += "\noutputs: " + outs_text;
    if (!v.bodies.empty()) title += "\nbodies: " + std::to_string(v.bodies.size()) + " (click)";
    svg += "<g class=\"node" + std::string(v.ep.empty() ? " noep" : "") + "\" id=\"n" +
           std::to_string(id) + "\" data-name=\"" + HtmlEscape(v.name) + "\" data-op=\"" + HtmlEscape(op) +
           "\" data-ep=\"" + HtmlEscape(ep) + "\" data-device=\"" + HtmlEscape(v.devices) + "\" data-graph=\"" +
           HtmlEscape(g.Title()) + "\" data-inputs=\"" + HtmlEscape(ins) + "\" data-outputs=\"" +
           HtmlEscape(outs_text) + "\" transform=\"translate(" + Num(p[i].x) + "," + Num(p[i].y) + ")\">";
    if (!v.bodies.empty()) svg += "<a href=\"#g" + std::to_string(v.bodies.front()) + "\">";
    svg += "<title>" + HtmlEscape(title) + "</title>";
    svg += "<rect width=\"" + Num(kBoxW) + "\" height=\"" + Num(kBoxH) + "\" rx=\"6\" fill=\"" +
           m.Color(v.ep) + "\"/>";
    svg += "<text x=\"7\" y=\"16\" class=\"nm\">" + HtmlEscape(Tail(v.label, kLineChars)) + "</text>";
    std::string line2 = op + " \xC2\xB7 " + ep;
    if (!v.bodies.empty())
      line2 += " \xC2\xB7 " + std::to_string(v.bodies.size()) + " bod" +
               (v.bodies.size() == 1 ? "y" : "ies") + " \xE2\x96\xB8";
    svg += "<text x=\"7\" y=\"32\" class=\"op\">" + HtmlEscape(Tail(line2, kLineChars + 2)) + "</text>";
    if (!v.bodies.empty()) svg += "</a>";
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

constexpr const char* kStyle = R"CSS(
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 0; padding: 16px 24px 80px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 4px; }
h3 { font-size: 14px; margin: 0; font-family: ui-monospace, monospace; word-break: break-all; }
.meta { color: #555; margin: 2px 0 8px; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; }
td.mono { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.swatch { display: inline-block; width: 14px; height: 14px; border: 1px solid #666;
          border-radius: 3px; vertical-align: -2px; margin-right: 6px; }
.legend span.item { margin-right: 18px; white-space: nowrap; }
.copyswatch { display: inline-block; width: 10px; height: 10px; background: #e00;
              transform: rotate(45deg); margin: 0 8px 0 3px; }
details { margin: 4px 0; }
summary { cursor: pointer; font-weight: 600; }
section.graph { border-left: 3px solid #ddd; padding: 4px 0 4px 12px; margin: 18px 0; }
.canvas { overflow: auto; max-width: 100%; border: 1px solid #e4e4e4; background: #fcfcfc; }
svg text { font: 11px ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; fill: #111;
           pointer-events: none; }
svg text.op { fill: #333; }
g.node rect { stroke: #555; stroke-width: 1; }
g.node.noep rect { stroke-dasharray: 4 3; }
g.node { cursor: pointer; }
g.node.sel rect { stroke: #000; stroke-width: 3; }
g.node.hit rect { stroke: #d00; stroke-width: 3; }
path.edge { fill: none; stroke: #777; stroke-width: 1.2; marker-end: url(#arrow); }
path.edge.copied { stroke: #e00; stroke-dasharray: 5 3; marker-end: url(#arrow-red); }
path.edge.lit { stroke: #000; stroke-width: 2.5; }
g.copy polygon { fill: #e00; stroke: #900; }
#bar { position: fixed; top: 0; right: 0; background: #fff; border: 1px solid #ccc;
       border-top: 0; padding: 6px 10px; font-size: 13px; z-index: 2; }
#bar input { width: 220px; }
#info { position: fixed; bottom: 0; right: 0; max-width: 560px; background: #fffff0;
        border: 1px solid #aaa; padding: 8px 12px; font-size: 12px; white-space: pre-wrap;
        font-family: ui-monospace, monospace; display: none; z-index: 2; }
)CSS";

constexpr const char* kScript = R"JS(
(function () {
  var nodes = document.querySelectorAll('g.node');
  var graphs = document.querySelectorAll('section.graph');
  document.getElementById('drawn').textContent =
      'drawn: ' + nodes.length + ' nodes in ' + graphs.length +
      (graphs.length === 1 ? ' graph' : ' graphs');
  // Rows are centred: show the middle of a graph wider than the window.
  document.querySelectorAll('.canvas').forEach(function (c) {
    c.scrollLeft = (c.scrollWidth - c.clientWidth) / 2;
  });
  var info = document.getElementById('info');
  var selected = null;
  function select(g) {
    if (selected) selected.classList.remove('sel');
    document.querySelectorAll('path.lit').forEach(function (p) { p.classList.remove('lit'); });
    selected = g;
    if (!g) { info.style.display = 'none'; return; }
    g.classList.add('sel');
    document.querySelectorAll('path[data-from="' + g.id + '"], path[data-to="' + g.id + '"]')
        .forEach(function (p) { p.classList.add('lit'); });
    var d = g.dataset;
    info.textContent = (d.name || '(unnamed)') + '\nop: ' + d.op + '\nEP: ' + d.ep +
        '\ndevice: ' + d.device + '\ngraph: ' + d.graph + '\ninputs: ' + d.inputs +
        '\noutputs: ' + d.outputs;
    info.style.display = 'block';
  }
  document.addEventListener('click', function (ev) {
    var g = ev.target.closest ? ev.target.closest('g.node') : null;
    select(g === selected ? null : g);
  });
  var q = document.getElementById('q'), hits = document.getElementById('hits');
  q.addEventListener('input', function () {
    var text = q.value.toLowerCase(), n = 0, first = null;
    nodes.forEach(function (g) {
      var d = g.dataset;
      var hit = text !== '' && (d.name + ' ' + d.op + ' ' + d.ep).toLowerCase().indexOf(text) >= 0;
      g.classList.toggle('hit', hit);
      if (hit) { n++; if (!first) first = g; }
    });
    hits.textContent = text === '' ? '' : n + ' found';
    if (first) first.scrollIntoView({block: 'center', inline: 'center'});
  });
})();
)JS";

}  // namespace

std::string PartitionHtml(const std::string& model, const AssignmentReport& r) {
  const ViewModel m = BuildViewModel(r);
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>nxrt partition: " + HtmlEscape(model) + "</title>\n<style>" + kStyle + "</style>\n";
  h += "</head>\n<body>\n";
  h += "<div id=\"bar\">find <input id=\"q\" type=\"search\" placeholder=\"node, op or EP\"> "
       "<span id=\"hits\"></span></div>\n<div id=\"info\"></div>\n";
  // Arrow heads, shared by every picture.
  h += "<svg width=\"0\" height=\"0\" style=\"position:absolute\"><defs>"
       "<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
       "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#777\"/></marker>"
       "<marker id=\"arrow-red\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
       "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#e00\"/>"
       "</marker></defs></svg>\n";

  // ---- Summary ----
  size_t placed = 0;
  for (const AssignedSubgraph& sg : r.subgraphs) placed += sg.nodes.size();
  h += "<h1>nxrt partition: " + HtmlEscape(model) + "</h1>\n";
  h += "<p class=\"meta\">" + std::to_string(placed) + " nodes placed in " +
       std::to_string(r.subgraphs.size()) + " subgraphs over " + std::to_string(m.graphs.size()) +
       " graph" + (m.graphs.size() == 1 ? "" : "s") + " &middot; " +
       std::to_string(r.fallbacks.size()) + " fallback" + (r.fallbacks.size() == 1 ? "" : "s") +
       " &middot; " + std::to_string(r.copies.size()) + " cop" +
       (r.copies.size() == 1 ? "y" : "ies") +
       " &middot; <span id=\"drawn\">drawn: " + std::to_string(m.nodes.size()) +
       " nodes (script not run)</span></p>\n";
  h += "<p class=\"legend\">";
  for (size_t i = 0; i < m.eps.size(); ++i)
    h += "<span class=\"item\"><span class=\"swatch\" style=\"background:" + m.colors[i] +
         "\"></span>" + HtmlEscape(m.eps[i]) + "</span>";
  bool no_ep = false;
  for (const ViewNode& n : m.nodes) no_ep = no_ep || n.ep.empty();
  if (no_ep)
    h += "<span class=\"item\"><span class=\"swatch\" style=\"background:" + m.Color("") +
         ";border-style:dashed\"></span>no EP</span>";
  h += "<span class=\"item\"><span class=\"copyswatch\"></span>copy between memories (red, "
       "dashed)</span></p>\n";

  // Per EP.
  h += "<h2>EPs</h2>\n<table><tr><th>EP</th><th>nodes</th><th>subgraphs</th><th>fused</th>"
       "<th>devices</th></tr>\n";
  for (size_t i = 0; i < m.eps.size(); ++i) {
    size_t nodes = 0, subgraphs = 0, fused = 0;
    std::vector<std::string> devices;
    for (const AssignedSubgraph& sg : r.subgraphs) {
      if (sg.ep_name != m.eps[i]) continue;
      nodes += sg.nodes.size();
      ++subgraphs;
      fused += sg.kind == "fused";
      const std::string d = DeviceText(sg);
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    }
    std::string dev;
    for (const std::string& d : devices) dev += (dev.empty() ? "" : "<br>") + HtmlEscape(d);
    h += "<tr><td><span class=\"swatch\" style=\"background:" + m.colors[i] + "\"></span>" +
         HtmlEscape(m.eps[i]) + "</td><td class=\"num\">" + std::to_string(nodes) +
         "</td><td class=\"num\">" + std::to_string(subgraphs) + "</td><td class=\"num\">" +
         std::to_string(fused) + "</td><td>" + dev + "</td></tr>\n";
  }
  h += "</table>\n";

  // Fallbacks.
  h += "<h2>Fallbacks</h2>\n";
  if (r.fallbacks.empty()) {
    h += "<p>none: the preferred EP" +
         (m.eps.empty() ? std::string() : " (" + HtmlEscape(m.eps.front()) + ")") +
         " took every node.</p>\n";
  } else {
    std::map<std::string, size_t> reasons;
    for (const NodeFallback& f : r.fallbacks) ++reasons[f.reason_name];
    std::string by;
    for (const auto& [reason, count] : reasons)
      by += (by.empty() ? "" : ", ") + HtmlEscape(reason) + " " + std::to_string(count);
    h += std::string("<details") + (r.fallbacks.size() <= kFoldRows ? " open" : "") + "><summary>" +
         std::to_string(r.fallbacks.size()) + " node" + (r.fallbacks.size() == 1 ? "" : "s") +
         " left " + HtmlEscape(r.fallbacks.front().preferred_ep) + " (" + by +
         ")</summary>\n<table><tr><th>graph</th><th>node</th><th>op</th>"
         "<th>reason</th><th>detail</th><th>runs on</th></tr>\n";
    for (const NodeFallback& f : r.fallbacks) {
      h += "<tr><td class=\"mono\">" + HtmlEscape(f.graph.empty() ? "main" : f.graph) +
           "</td><td class=\"mono\">" + HtmlEscape(f.node.name) + "</td><td>" + HtmlEscape(f.node.op_type) +
           "</td><td>" + HtmlEscape(f.reason_name) + "</td><td>" + HtmlEscape(f.detail) + "</td><td>" +
           HtmlEscape(f.assigned_ep.empty() ? "no EP" : f.assigned_ep) + "</td></tr>\n";
    }
    h += "</table></details>\n";
  }

  // Copies.
  h += "<h2>Copies between memories</h2>\n";
  if (r.copies.empty()) {
    h += "<p>none: every value is read in the memory it is in.</p>\n";
  } else {
    h += std::string("<details") + (r.copies.size() <= kFoldRows ? " open" : "") + "><summary>" +
         std::to_string(r.copies.size()) + " cop" + (r.copies.size() == 1 ? "y" : "ies") +
         "</summary>\n<table><tr><th>graph</th><th>value</th><th>from</th><th>to</th></tr>\n";
    for (const ReportCopy& c : r.copies) {
      h += "<tr><td class=\"mono\">" + HtmlEscape(c.graph.empty() ? "main" : c.graph) +
           "</td><td class=\"mono\">" + HtmlEscape(c.value) + "</td><td>" +
           HtmlEscape(c.from_ep.empty() ? "host (graph input)" : c.from_ep) + "</td><td>" +
           HtmlEscape(c.to_ep.empty() ? "host (graph output)" : c.to_ep) + "</td></tr>\n";
    }
    h += "</table></details>\n";
  }

  // Subgraphs, as `nxrt partition` prints them.
  h += "<h2>Subgraphs</h2>\n";
  h += std::string("<details") + (r.subgraphs.size() <= kFoldRows ? " open" : "") + "><summary>" +
       std::to_string(r.subgraphs.size()) + " subgraph" + (r.subgraphs.size() == 1 ? "" : "s") +
       "</summary>\n<table><tr><th>#</th><th>graph</th><th>EP</th><th>kind</th><th>device</th>"
       "<th>nodes</th><th>ops</th></tr>\n";
  for (size_t i = 0; i < r.subgraphs.size(); ++i) {
    const AssignedSubgraph& sg = r.subgraphs[i];
    h += "<tr><td class=\"num\">" + std::to_string(i) + "</td><td class=\"mono\">" +
         HtmlEscape(sg.graph.empty() ? "main" : sg.graph) + "</td><td><span class=\"swatch\" " +
         "style=\"background:" + m.Color(sg.ep_name) + "\"></span>" + HtmlEscape(sg.ep_name) +
         "</td><td>" + HtmlEscape(sg.kind) + "</td><td>" + HtmlEscape(DeviceText(sg)) +
         "</td><td class=\"num\">" + std::to_string(sg.nodes.size()) + "</td><td>" +
         HtmlEscape(OpCounts(sg.nodes)) + "</td></tr>\n";
  }
  h += "</table></details>\n";

  // The graphs, depth first (a body after its parent), each drawn.
  std::vector<size_t> order;
  std::vector<size_t> depth(m.graphs.size(), 0);
  std::vector<size_t> stack{0};
  std::vector<char> seen(m.graphs.size(), 0);
  while (!stack.empty()) {
    const size_t g = stack.back();
    stack.pop_back();
    if (seen[g]) continue;
    seen[g] = 1;
    order.push_back(g);
    for (size_t b = m.graphs.size(); b-- > 0;) {
      if (m.graphs[b].parent == static_cast<int>(g) && !seen[b]) {
        depth[b] = depth[g] + 1;
        stack.push_back(b);
      }
    }
  }
  for (size_t g = 0; g < m.graphs.size(); ++g)
    if (!seen[g]) order.push_back(g);
  h += "<h2>Graphs</h2>\n";
  if (m.graphs.size() > 1) {
    h += std::string("<details") + (m.graphs.size() <= 12 ? " open" : "") + "><summary>" +
         std::to_string(m.graphs.size()) +
         " graphs (the main graph and its control-flow "
         "bodies)</summary>\n<ul>\n";
    for (size_t g : order)
      h += "<li style=\"margin-left:" + std::to_string(depth[g] * 16) + "px\"><a href=\"#g" +
           std::to_string(g) + "\">" + HtmlEscape(m.graphs[g].Title()) + "</a> (" +
           std::to_string(m.graphs[g].nodes.size()) + " nodes)</li>\n";
    h += "</ul></details>\n";
  }
  for (size_t g : order) {
    const ViewGraph& vg = m.graphs[g];
    h += "<section class=\"graph\" id=\"g" + std::to_string(g) +
         "\" style=\"margin-left:" + std::to_string(std::min<size_t>(depth[g], 8) * 16) +
         "px\">\n<h3>" + HtmlEscape(vg.Title()) + "</h3>\n<p class=\"meta\">" +
         std::to_string(vg.nodes.size()) + " node" + (vg.nodes.size() == 1 ? "" : "s");
    if (vg.owner >= 0) {
      const ViewNode& owner = m.nodes[static_cast<size_t>(vg.owner)];
      h += " &middot; body <b>" + HtmlEscape(vg.attribute) + "</b> of " + HtmlEscape(owner.op_type) +
           " <a href=\"#n" + std::to_string(vg.owner) + "\">" + HtmlEscape(owner.label) +
           "</a> in <a href=\"#g" + std::to_string(owner.graph) + "\">" +
           HtmlEscape(m.graphs[owner.graph].Title()) + "</a>";
    }
    size_t copies = vg.copies_in.size() + vg.copies_out.size();
    for (const ViewEdge& e : vg.edges) copies += e.copy;
    if (copies > 0) h += " &middot; " + std::to_string(copies) + " copies";
    h += "</p>\n<div class=\"canvas\">\n" + DrawGraph(m, vg) + "</div>\n</section>\n";
  }
  h += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace nxrt::cli
