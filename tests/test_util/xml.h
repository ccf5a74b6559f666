// Checks of the SVG and XML the tool writes, shared by the tests of its
// flame graphs and charts.
#ifndef BACKENDLAB_TESTS_TEST_UTIL_XML_H_
#define BACKENDLAB_TESTS_TEST_UTIL_XML_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace backendlab::test_util {

// A small structural XML check: tags balance, attribute values are quoted,
// '<' / '&' appear in text only as markup or known entities, and CDATA
// sections (a script's) are taken whole. Returns an
// empty string when well formed, else what is wrong.
inline std::string CheckXml(std::string_view xml) {
  std::vector<std::string> open;
  size_t i = 0;
  bool seen_root = false;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      size_t semi = xml.find(';', i);
      if (semi == std::string_view::npos) return "unterminated entity";
      std::string entity(xml.substr(i, semi - i + 1));
      static const std::set<std::string> kKnown = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
      if (!kKnown.count(entity)) return "unknown entity " + entity;
      i = semi + 1;
      continue;
    }
    if (xml[i] == '>') return "stray '>' at " + std::to_string(i);
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    if (xml.substr(i, 9) == "<![CDATA[") {
      size_t end = xml.find("]]>", i);
      if (end == std::string_view::npos) return "unterminated CDATA";
      i = end + 3;
      continue;
    }
    if (xml.substr(i, 2) == "<?") {
      size_t end = xml.find("?>", i);
      if (end == std::string_view::npos) return "unterminated <?";
      i = end + 2;
      continue;
    }
    size_t end = i + 1;
    char quote = 0;
    while (end < xml.size() && (quote != 0 || xml[end] != '>')) {
      if (quote == 0 && (xml[end] == '"' || xml[end] == '\'')) {
        quote = xml[end];
      } else if (quote != 0 && xml[end] == quote) {
        quote = 0;
      } else if (xml[end] == '<') {
        return "'<' inside a tag at " + std::to_string(end);
      }
      ++end;
    }
    if (end >= xml.size()) return "unterminated tag";
    std::string_view tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag.front() == '/') {
      std::string name(tag.substr(1));
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
      continue;
    }
    bool self_closing = tag.back() == '/';
    std::string name(tag.substr(0, tag.find_first_of(" \t\n/")));
    if (open.empty()) {
      if (seen_root) return "second root element " + name;
      seen_root = true;
    }
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (!seen_root) return "no root element";
  return "";
}

inline size_t Count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string_view::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

}  // namespace backendlab::test_util

#endif  // BACKENDLAB_TESTS_TEST_UTIL_XML_H_
