// One self-contained HTML page per run (--html=FILE): the run's table with
// its intervals and verdicts, a chart, the interactive flame graphs (diffs
// too) and the phase timeline, built from the same JSON the run writes
// (--json). No network, no library: the page's own script draws the table,
// the chart and the timeline from the JSON embedded in it; each flame graph
// is the SVG the run writes, with its own search and zoom.
#ifndef BACKENDLAB_TOOLS_HTML_REPORT_H_
#define BACKENDLAB_TOOLS_HTML_REPORT_H_

#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "profiling/exports.h"
#include "tools/report.h"

namespace backendlab::tools {

// An ostream that writes through to another and keeps what it wrote: the
// run's text, for its page.
class Transcript : public std::ostream {
 public:
  explicit Transcript(std::ostream& to) : std::ostream(&buf_), buf_(to.rdbuf()) {}
  const std::string& text() const { return buf_.kept; }

 private:
  struct Buf : std::streambuf {
    explicit Buf(std::streambuf* target) : to(target) {}
    int_type overflow(int_type c) override {
      if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
      kept.push_back(traits_type::to_char_type(c));
      return to->sputc(traits_type::to_char_type(c));
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
      kept.append(s, static_cast<size_t>(n));
      return to->sputn(s, n);
    }
    int sync() override { return to->pubsync(); }
    std::streambuf* to;
    std::string kept;
  };
  Buf buf_;
};

struct HtmlPage {
  std::string title;              // "backendlab compare"
  std::string subtitle;           // the machine line
  std::string text;               // what the run printed, shown folded
  nlohmann::json data;            // the run's JSON: {"header": ..., "rows": [...]}
  std::vector<Column> columns;    // the table's (Report::SharedColumns)
  // A bar chart of this column (a median or ratio, with its _ci) by the
  // rows' first column; "" for none.
  std::string chart_key;
  std::string chart_title;
  struct Figure {
    std::string caption;
    std::string svg;  // an SVG document: a chart, a flame graph, a diff
  };
  std::vector<Figure> figures;
  std::vector<profiling::TraceSpan> timeline;  // spans of the first backends; empty: none
};

// A run's page: `title`, the machine line of `header` (MachineHeader's),
// the text printed so far, and `report`'s JSON and columns (its header
// set). The chart, figures and timeline are the caller's to add.
HtmlPage PageOf(std::string title, const nlohmann::json& header, const Report& report, const std::string& text);

// The page, one string: no external reference of any kind.
std::string RenderHtml(const HtmlPage& page);

// --html: the file written (WriteTextFile), its path checked before the
// run by CheckOutputPaths as --json's is.
absl::Status WriteHtml(const std::string& path, const HtmlPage& page);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_HTML_REPORT_H_
