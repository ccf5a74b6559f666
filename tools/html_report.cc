// The HTML page: its markup, its data and its one script.
#include "tools/html_report.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/xml_escape.h"
#include "tools/machine_header.h"

namespace backendlab::tools {
namespace {

constexpr char kStyle[] = R"CSS(
body { font-family: Verdana, sans-serif; font-size: 13px; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table.rows { border-collapse: collapse; }
table.rows th, table.rows td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; white-space: nowrap; }
table.rows th { background: #eee; position: sticky; top: 0; }
table.rows td:first-child, table.rows th:first-child { text-align: left; }
td.faster { background: #e0f2e0; } td.slower { background: #f8e0e0; }
.note { color: #555; }
figure { margin: 12px 0; } figcaption { font-weight: bold; margin-bottom: 4px; }
figure svg { max-width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
)CSS";

// The table, the chart and the timeline, drawn from the JSON in the page.
constexpr char kScript[] = R"JS(
(function () {
  'use strict';
  var page = JSON.parse(document.getElementById('backendlab-data').textContent);
  var rows = page.data.rows || [], columns = page.columns;
  var NS = 'http://www.w3.org/2000/svg';
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fixed(v, digits) { return typeof v === 'number' ? v.toFixed(digits) : String(v); }
  // A cell as the text table has it: a median with +-half its interval, a
  // ratio with its interval and verdict.
  function cell(row, c) {
    var v = row[c.key];
    if (v === null || v === undefined) return { text: '-' };
    if (typeof v === 'boolean') return { text: v ? 'yes' : 'no' };
    if (Array.isArray(v)) return { text: v.length + ' values' };
    if (typeof v !== 'number') return { text: String(v) };
    var text = fixed(v, c.precision), ci = row[c.key + '_ci'], verdict = row[c.key + '_verdict'];
    if (c.kind === 'ratio' && ci) text += ' [' + fixed(ci[0], c.precision + 1) + ', ' + fixed(ci[1], c.precision + 1) + ']';
    if (c.kind === 'ratio' && verdict) text += ' ' + verdict;
    if (c.kind === 'median' && ci && v !== 0) text += ' \u00b1' + (100 * (ci[1] - ci[0]) / 2 / v).toFixed(1) + '%';
    if (row[c.key + '_precise'] === false) text += '*';
    return { text: text, verdict: c.kind === 'ratio' ? verdict : undefined };
  }
  function table() {
    var t = el('table', { 'class': 'rows', id: 'rows' }), head = el('thead'), tr = el('tr');
    columns.forEach(function (c) { tr.appendChild(el('th', { title: c.key }, c.heading)); });
    head.appendChild(tr);
    t.appendChild(head);
    var body = el('tbody');
    rows.forEach(function (row) {
      var r = el('tr');
      columns.forEach(function (c) {
        var x = cell(row, c), td = el('td', {}, x.text);
        if (x.verdict === 'faster' || x.verdict === 'slower') td.className = x.verdict;
        r.appendChild(td);
      });
      body.appendChild(r);
    });
    t.appendChild(body);
    document.getElementById('table').appendChild(t);
  }
  // Horizontal bars of one column by the rows' first column, the 95 %
  // interval as whiskers.
  function chart() {
    var key = page.chart_key;
    if (!key) return;
    var items = rows.filter(function (r) { return typeof r[key] === 'number'; });
    if (!items.length) return;
    // A bar's label: the row's leading text cells ("array/always 128MB").
    function label(r) {
      var parts = [];
      for (var i = 0; i < columns.length && typeof r[columns[i].key] === 'string'; ++i) parts.push(r[columns[i].key]);
      return parts.length ? parts.join(' ') : String(r[columns[0].key]);
    }
    var bar = 18, left = 260, width = 560, top = 24;
    var most = 0;
    items.forEach(function (r) { var ci = r[key + '_ci']; most = Math.max(most, ci ? ci[1] : r[key], r[key]); });
    var svg = svgEl('svg', { width: left + width + 90, height: top + items.length * bar + 30, 'class': 'chart' });
    svg.appendChild(svgEl('text', { x: 4, y: 16, 'font-size': 13 }, page.chart_title));
    items.forEach(function (r, i) {
      var y = top + i * bar, w = most > 0 ? width * r[key] / most : 0, ci = r[key + '_ci'];
      svg.appendChild(svgEl('text', { x: left - 6, y: y + 13, 'text-anchor': 'end', 'font-size': 11 }, label(r)));
      var rect = svgEl('rect', { x: left, y: y + 3, width: Math.max(w, 0.5), height: bar - 6, fill: 'rgb(90,130,190)' });
      rect.appendChild(svgEl('title', {}, label(r) + ': ' + fixed(r[key], 2)));
      svg.appendChild(rect);
      if (ci && most > 0) {
        var x0 = left + width * ci[0] / most, x1 = left + width * ci[1] / most, m = y + bar / 2;
        svg.appendChild(svgEl('line', { x1: x0, x2: x1, y1: m, y2: m, stroke: 'black' }));
        svg.appendChild(svgEl('line', { x1: x0, x2: x0, y1: m - 4, y2: m + 4, stroke: 'black' }));
        svg.appendChild(svgEl('line', { x1: x1, x2: x1, y1: m - 4, y2: m + 4, stroke: 'black' }));
      }
      svg.appendChild(svgEl('text', { x: left + w + 6 + (ci && most > 0 ? width * (ci[1] - r[key]) / most : 0), y: y + 13, 'font-size': 11 }, fixed(r[key], 1)));
    });
    document.getElementById('chart').appendChild(svg);
  }
  // A track per process, a bar per span, coloured by phase, on one time
  // axis: the first 10 processes at first (their overlap visible), 50 or all
  // on request, the axis spanning the processes shown.
  function timeline() {
    var spans = page.timeline;
    if (!spans.length) return;
    var order = [], index = {};
    spans.forEach(function (s) { if (!(s.pid in index)) { index[s.pid] = order.length; order.push(s.process); } });
    var palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac', '#86bcb6', '#d37295', '#8cd17d', '#499894'];
    var colors = {}, names = [];
    spans.forEach(function (s) { if (!(s.name in colors)) { colors[s.name] = palette[names.length % palette.length]; names.push(s.name); } });
    var host = document.getElementById('timeline');
    var controls = document.createElement('p');
    controls.className = 'note';
    controls.appendChild(document.createTextNode('processes shown: '));
    host.appendChild(controls);
    var holder = document.createElement('div');
    host.appendChild(holder);
    function draw(count) {
      var n = Math.min(count, order.length), t0 = Infinity, t1 = -Infinity;
      var shown = spans.filter(function (s) { return index[s.pid] < n; });
      shown.forEach(function (s) { t0 = Math.min(t0, s.start); t1 = Math.max(t1, s.start + s.dur); });
      var row = n > 60 ? 12 : 18, left = 230, width = 900, top = 30, span = Math.max(t1 - t0, 1);
      var svg = svgEl('svg', { width: left + width + 20, height: top + n * row + 20, 'class': 'timeline' });
      names.forEach(function (name, i) {
        svg.appendChild(svgEl('rect', { x: left + i * 100, y: 6, width: 10, height: 10, fill: colors[name] }));
        svg.appendChild(svgEl('text', { x: left + i * 100 + 14, y: 15, 'font-size': 11 }, name));
      });
      for (var i = 0; i < n; ++i) {
        svg.appendChild(svgEl('text', { x: left - 6, y: top + i * row + row / 2 + 3, 'text-anchor': 'end', 'font-size': 9, 'class': 'track' }, order[i]));
      }
      shown.forEach(function (s) {
        var x = left + width * (s.start - t0) / span, w = Math.max(width * s.dur / span, 0.5);
        var r = svgEl('rect', { x: x, y: top + index[s.pid] * row, width: w, height: row - 2, fill: colors[s.name], 'class': 'span' });
        r.appendChild(svgEl('title', {}, s.process + ': ' + s.name + ', ' + (s.dur / 1000).toFixed(1) + ' us at ' + ((s.start - t0) / 1e6).toFixed(3) + ' ms'));
        svg.appendChild(r);
      });
      svg.appendChild(svgEl('text', { x: left, y: top + n * row + 14, 'font-size': 11 }, '0 ms'));
      svg.appendChild(svgEl('text', { x: left + width, y: top + n * row + 14, 'font-size': 11, 'text-anchor': 'end' }, (span / 1e6).toFixed(3) + ' ms'));
      holder.textContent = '';
      holder.appendChild(svg);
    }
    [10, 50].filter(function (c) { return c < order.length; }).concat([order.length]).forEach(function (count) {
      var a = document.createElement('a');
      a.href = '#timeline';
      a.textContent = count === order.length ? 'all ' + count : 'first ' + count;
      a.style.marginRight = '1em';
      a.addEventListener('click', function (e) { e.preventDefault(); draw(count); });
      controls.appendChild(a);
    });
    draw(10);
  }
  table();
  chart();
  timeline();
  document.body.setAttribute('data-ready', 'yes');
})();
)JS";

// An SVG document inline in HTML: without its XML declaration.
std::string_view InlineSvg(std::string_view svg) {
  if (svg.starts_with("<?xml")) svg.remove_prefix(svg.find("?>") + 2);
  while (!svg.empty() && (svg.front() == '\n' || svg.front() == ' ')) svg.remove_prefix(1);
  return svg;
}

std::string_view KindName(ColumnKind k) {
  switch (k) {
    case ColumnKind::kMedian:
      return "median";
    case ColumnKind::kRatio:
      return "ratio";
    case ColumnKind::kValue:
      break;
  }
  return "value";
}

}  // namespace

HtmlPage PageOf(std::string title, const nlohmann::json& header, const Report& report, const std::string& text) {
  HtmlPage page;
  page.title = std::move(title);
  page.subtitle = MachineLine(header);
  page.text = text;
  page.data = report.ToJson();
  page.columns = report.SharedColumns();
  return page;
}

std::string RenderHtml(const HtmlPage& page) {
  nlohmann::json columns = nlohmann::json::array();
  for (const Column& c : page.columns) {
    columns.push_back({{"key", c.key}, {"heading", c.heading}, {"precision", c.precision}, {"kind", KindName(c.kind)}});
  }
  nlohmann::json spans = nlohmann::json::array();
  for (const profiling::TraceSpan& s : page.timeline) {
    spans.push_back({{"name", s.name}, {"pid", s.pid}, {"process", s.process}, {"start", s.start_ns}, {"dur", s.duration_ns}});
  }
  const nlohmann::json data = {{"data", page.data},
                               {"columns", columns},
                               {"chart_key", page.chart_key},
                               {"chart_title", page.chart_title},
                               {"timeline", spans}};
  // Inside <script>, "</" would end it early: JSON allows "<\/".
  const std::string json = absl::StrReplaceAll(data.dump(), {{"</", "<\\/"}});
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", EscapeXml(page.title),
      "</title>\n<style>", kStyle, "</style>\n</head>\n<body>\n<h1>", EscapeXml(page.title), "</h1>\n");
  if (!page.subtitle.empty()) absl::StrAppend(&html, "<p class=\"note\">", EscapeXml(page.subtitle), "</p>\n");
  absl::StrAppend(&html, "<h2>Table</h2>\n<div id=\"table\"></div>\n",
                  "<p class=\"note\">Medians of the rounds with &#177; half their 95 % interval; ratios paired within rounds, "
                  "[95 % interval] and a verdict (faster and slower exclude 1, ~ covers it). The same figures as --json.</p>\n");
  if (!page.chart_key.empty()) absl::StrAppend(&html, "<h2>Chart</h2>\n<div id=\"chart\"></div>\n");
  for (const HtmlPage::Figure& f : page.figures) {
    absl::StrAppend(&html, "<figure>\n<figcaption>", EscapeXml(f.caption), "</figcaption>\n", std::string(InlineSvg(f.svg)),
                    "</figure>\n");
  }
  if (!page.timeline.empty()) {
    absl::StrAppend(&html, "<h2>Phase timeline</h2>\n<p class=\"note\">Each backend's phases on one clock, a track per "
                           "process (hover a bar for its times): one backend's exit beside the next one's fork.</p>\n"
                           "<div id=\"timeline\"></div>\n");
  } else {
    absl::StrAppend(&html, "<div id=\"timeline\"></div>\n");
  }
  if (page.chart_key.empty()) absl::StrAppend(&html, "<div id=\"chart\"></div>\n");
  absl::StrAppend(&html, "<h2>The run's text</h2>\n<details><summary>as printed</summary>\n<pre>", EscapeXml(page.text),
                  "</pre></details>\n<script type=\"application/json\" id=\"backendlab-data\">", json,
                  "</script>\n<script>", kScript, "</script>\n</body>\n</html>\n");
  return html;
}

absl::Status WriteHtml(const std::string& path, const HtmlPage& page) { return WriteTextFile(path, RenderHtml(page)); }

}  // namespace backendlab::tools
