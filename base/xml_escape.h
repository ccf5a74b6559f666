// Escaping text for XML (the SVG files backendlab writes: line charts, flame
// graphs), in one place.
#ifndef BACKENDLAB_BASE_XML_ESCAPE_H_
#define BACKENDLAB_BASE_XML_ESCAPE_H_

#include <string>
#include <string_view>

namespace backendlab {

// `text` with the five XML special characters escaped; control characters
// other than tab (which XML 1.0 forbids even escaped) become '?'.
std::string EscapeXml(std::string_view text);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_XML_ESCAPE_H_
