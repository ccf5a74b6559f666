// The SVG line chart: a well-formed document with one line per series.
#include "base/line_chart.h"

#include <string>

#include "gtest/gtest.h"

namespace backendlab {
namespace {

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

LineChart SampleChart() {
  return {"cost <per> connection",
          "shared_buffers",
          "us",
          {"128MB", "1GB", "8GB"},
          {{"array/always", {100.0, 200.0, 400.0}}, {"hash&co", {90.0, std::nullopt, 95.0}}}};
}

TEST(LineChartTest, OnePolylinePerSeriesAndACirclePerPoint) {
  const std::string svg = RenderLineChart(SampleChart());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg;
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(Count(svg, "<svg"), 1u);
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
  EXPECT_EQ(Count(svg, "<circle"), 5u) << "a missing value has no point";
  EXPECT_EQ(Count(svg, "<circle"), Count(svg, "</circle>"));
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<title>"), Count(svg, "</title>"));
  for (const char* x : {">128MB<", ">1GB<", ">8GB<", ">shared_buffers<"}) EXPECT_NE(svg.find(x), std::string::npos) << x;
  EXPECT_NE(svg.find("<title>array/always at 8GB: 400 us</title>"), std::string::npos) << svg;
  // The series with a gap is drawn through the points it has: two of them.
  const size_t second = svg.find("<polyline", svg.find("<polyline") + 1);
  const std::string points = svg.substr(svg.find("points=\"", second) + 8);
  EXPECT_EQ(Count(points.substr(0, points.find('"')), ","), 2u) << points;
}

TEST(LineChartTest, TextIsEscaped) {
  const std::string svg = RenderLineChart(SampleChart());
  EXPECT_NE(svg.find("cost &lt;per&gt; connection"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">hash&amp;co</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("hash&co"), std::string::npos);
}

TEST(LineChartTest, NoValuesStillDrawsAxes) {
  const std::string svg = RenderLineChart({"empty", "x", "us", {"a"}, {{"s", {std::nullopt}}}});
  EXPECT_EQ(Count(svg, "<circle"), 0u);
  EXPECT_EQ(Count(svg, "<polyline"), 1u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

}  // namespace
}  // namespace backendlab
