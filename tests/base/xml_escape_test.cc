// EscapeXml: the one escaping of every SVG backendlab writes.
#include "base/xml_escape.h"

#include "gtest/gtest.h"

namespace backendlab {
namespace {

TEST(XmlEscapeTest, EscapesTheFiveSpecialCharactersAndReplacesControls) {
  EXPECT_EQ(EscapeXml("a<b>&\"'\x01"), "a&lt;b&gt;&amp;&quot;&apos;?");
  EXPECT_EQ(EscapeXml("tab\tstays"), "tab\tstays");
  EXPECT_EQ(EscapeXml("new\nline"), "new?line");
  EXPECT_EQ(EscapeXml("caf\xc3\xa9"), "caf\xc3\xa9") << "UTF-8 passes through";
}

}  // namespace
}  // namespace backendlab
