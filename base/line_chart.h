// A line chart as a self-contained SVG file: one polyline per series over a
// row of named x positions (e.g. cost per connection against shared_buffers,
// one line per configuration). Knows nothing of what is plotted, so any
// command or benchmark can draw one.
#ifndef BACKENDLAB_BASE_LINE_CHART_H_
#define BACKENDLAB_BASE_LINE_CHART_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace backendlab {

struct ChartSeries {
  std::string name;                         // legend and tooltips
  std::vector<std::optional<double>> values;  // one per x position; nullopt: no point there
};

struct LineChart {
  std::string title;
  std::string x_label;                    // under the x axis
  std::string unit;                       // after each value in a point's tooltip, e.g. "us"
  std::vector<std::string> x_positions;   // names along the x axis, evenly spaced
  std::vector<ChartSeries> series;        // drawn and listed in this order
};

// The SVG document: axes from 0 to 110 % of the largest value, five y ticks,
// one colour per series (cycling after ten), a circle per point with a
// <title> tooltip "name at x: value unit", and a legend. Text is escaped.
std::string RenderLineChart(const LineChart& chart);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_LINE_CHART_H_
