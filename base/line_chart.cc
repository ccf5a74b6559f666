// SVG line charts.
#include "base/line_chart.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/xml_escape.h"

namespace backendlab {

std::string RenderLineChart(const LineChart& chart) {
  // Room on the right for the legend, at the bottom for the x names.
  constexpr double kWidth = 760, kHeight = 420, kLeft = 70, kRight = 230, kTop = 40, kBottom = 50;
  constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;
  // Distinguishable on white and for the common colour-vision deficiencies (the "category10" palette).
  static constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  double ymax = 0;
  for (const ChartSeries& s : chart.series) {
    for (const std::optional<double>& v : s.values) ymax = std::max(ymax, v.value_or(0));
  }
  ymax = ymax <= 0 ? 1 : ymax * 1.1;
  const size_t n = chart.x_positions.size();
  auto x_of = [&](size_t i) {
    return kLeft + (n <= 1 ? kPlotWidth / 2 : kPlotWidth * static_cast<double>(i) / static_cast<double>(n - 1));
  };
  auto y_of = [&](double v) { return kTop + kPlotHeight - kPlotHeight * v / ymax; };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"15\">%s</text>\n",
      kWidth, kHeight, kLeft, EscapeXml(chart.title));
  auto line = [&](double x1, double y1, double x2, double y2, const char* color) {
    absl::StrAppendFormat(&svg, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\"/>\n", x1, y1, x2,
                          y2, color);
  };
  line(kLeft, kTop + kPlotHeight, kLeft + kPlotWidth, kTop + kPlotHeight, "black");
  line(kLeft, kTop, kLeft, kTop + kPlotHeight, "black");
  for (int t = 0; t <= 4; ++t) {
    const double v = ymax * t / 4;
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.0f</text>\n", kLeft - 6,
                          y_of(v) + 4, v);
    line(kLeft, y_of(v), kLeft + kPlotWidth, y_of(v), "#ddd");
  }
  for (size_t i = 0; i < n; ++i) {
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x_of(i),
                          kTop + kPlotHeight + 18, EscapeXml(chart.x_positions[i]));
  }
  absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n",
                        kLeft + kPlotWidth / 2, kHeight - 10, EscapeXml(chart.x_label));
  for (size_t k = 0; k < chart.series.size(); ++k) {
    const ChartSeries& s = chart.series[k];
    const char* color = kColors[k % std::size(kColors)];
    const std::string name = EscapeXml(s.name);
    std::string points, circles;
    for (size_t i = 0; i < s.values.size() && i < n; ++i) {
      if (!s.values[i]) continue;
      const double v = *s.values[i];
      absl::StrAppendFormat(&points, "%s%.1f,%.1f", points.empty() ? "" : " ", x_of(i), y_of(v));
      absl::StrAppendFormat(&circles,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s at %s: %.0f %s</title></circle>\n",
                            x_of(i), y_of(v), color, name, EscapeXml(chart.x_positions[i]), v, EscapeXml(chart.unit));
    }
    absl::StrAppendFormat(&svg, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", color,
                          points);
    svg += circles;
    const double legend_y = kTop + 10 + 18 * static_cast<double>(k);
    absl::StrAppendFormat(&svg, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"3\" fill=\"%s\"/>\n",
                          kLeft + kPlotWidth + 20, legend_y, color);
    absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", kLeft + kPlotWidth + 40, legend_y + 5, name);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace backendlab
