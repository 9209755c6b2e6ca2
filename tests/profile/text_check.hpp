// Minimal, strict checkers for the timeline's file formats, so that the tests need no Python:
// a JSON parser (RFC 8259 grammar, values kept as a tree) and an XML well-formedness check that
// counts elements.
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace voxtest {

struct json {
  enum class type { null, boolean, number, string, array, object };
  type t{type::null};
  bool b{false};
  double num{0};
  std::string str;
  std::vector<json> arr;
  std::vector<std::pair<std::string, json>> obj;

  [[nodiscard]] const json* find(const std::string& key) const {
    for (const auto& kv : obj)
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  [[nodiscard]] const json& at(const std::string& key) const {
    const json* j = find(key);
    if (j == nullptr) throw std::runtime_error("json: no key '" + key + "'");
    return *j;
  }
};

class json_parser {
 public:
  explicit json_parser(const std::string& s) : s_(s) {}
  json parse() {
    json v = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  void literal(const char* lit) {
    for (const char* p = lit; *p != '\0'; ++p, ++i_)
      if (i_ >= s_.size() || s_[i_] != *p) fail(std::string("bad literal, expected ") + lit);
  }
  json value() {
    const char c = peek();
    json v;
    if (c == '{') {
      v.t = json::type::object;
      ++i_;
      if (peek() == '}') {
        ++i_;
        return v;
      }
      for (;;) {
        if (peek() != '"') fail("expected a key");
        std::string k = string();
        expect(':');
        v.obj.emplace_back(std::move(k), value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.t = json::type::array;
      ++i_;
      if (peek() == ']') {
        ++i_;
        return v;
      }
      for (;;) {
        v.arr.push_back(value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.t = json::type::string;
      v.str = string();
      return v;
    }
    if (c == 't') {
      literal("true");
      v.t = json::type::boolean;
      v.b = true;
      return v;
    }
    if (c == 'f') {
      literal("false");
      v.t = json::type::boolean;
      return v;
    }
    if (c == 'n') {
      literal("null");
      return v;
    }
    v.t = json::type::number;
    v.num = number();
    return v;
  }
  double number() {
    const std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("bad number");
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_])))
        fail("bad fraction");
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_])))
        fail("bad exponent");
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    return std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
  }
  std::string string() {
    expect('"');
    std::string o;
    for (;;) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return o;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        o += c;
        continue;
      }
      if (i_ >= s_.size()) fail("bad escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          o += e;
          break;
        case 'b':
          o += '\b';
          break;
        case 'f':
          o += '\f';
          break;
        case 'n':
          o += '\n';
          break;
        case 'r':
          o += '\r';
          break;
        case 't':
          o += '\t';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("bad \\u escape");
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            if (!std::isxdigit(static_cast<unsigned char>(h))) fail("bad \\u escape");
            cp = cp * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h))
                                                     ? h - '0'
                                                     : (std::tolower(h) - 'a' + 10));
          }
          if (cp >= 0x80) fail("non-ASCII \\u escape (not produced by the writer)");
          o += static_cast<char>(cp);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }
  const std::string& s_;
  std::size_t i_{0};
};

inline json parse_json(const std::string& s) { return json_parser(s).parse(); }

/// Counts of XML elements by name and by (name, class attribute), after checking that the text
/// is well formed: one root, properly nested tags, quoted attributes, known entities only.
struct xml_summary {
  std::map<std::string, std::size_t> elements;
  std::map<std::string, std::size_t> classes;  // "rect.k" -> count
  std::vector<std::string> texts;              // character data, entities decoded
};

inline xml_summary check_xml(const std::string& s) {
  xml_summary out;
  std::vector<std::string> open;
  std::size_t i = 0;
  int roots = 0;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("xml: " + what + " at offset " + std::to_string(i));
  };
  auto decode = [&](const std::string& t) {
    std::string o;
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (t[k] != '&') {
        if (t[k] == '<' || t[k] == '>') fail("raw < or > in text");
        o += t[k];
        continue;
      }
      const std::size_t e = t.find(';', k);
      if (e == std::string::npos) fail("unterminated entity");
      const std::string name = t.substr(k + 1, e - k - 1);
      if (name == "lt")
        o += '<';
      else if (name == "gt")
        o += '>';
      else if (name == "amp")
        o += '&';
      else if (name == "quot")
        o += '"';
      else if (name == "apos")
        o += '\'';
      else
        fail("unknown entity &" + name + ";");
      k = e;
    }
    return o;
  };
  if (s.compare(0, 5, "<?xml") == 0) {
    const std::size_t e = s.find("?>");
    if (e == std::string::npos) fail("unterminated prolog");
    i = e + 2;
  }
  while (i < s.size()) {
    if (s[i] != '<') {
      const std::size_t e = s.find('<', i);
      const std::string text = s.substr(i, e == std::string::npos ? std::string::npos : e - i);
      const std::string d = decode(text);
      if (open.empty() && d.find_first_not_of(" \n\r\t") != std::string::npos)
        fail("text outside the root element");
      if (d.find_first_not_of(" \n\r\t") != std::string::npos) out.texts.push_back(d);
      if (e == std::string::npos) break;
      i = e;
      continue;
    }
    const std::size_t e = s.find('>', i);
    if (e == std::string::npos) fail("unterminated tag");
    std::string tag = s.substr(i + 1, e - i - 1);
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) fail("mismatched </" + name + ">");
      open.pop_back();
      i = e + 1;
      continue;
    }
    const bool self = !tag.empty() && tag.back() == '/';
    if (self) tag.pop_back();
    std::size_t k = 0;
    while (k < tag.size() && !std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
    const std::string name = tag.substr(0, k);
    if (name.empty()) fail("empty tag name");
    std::string cls;
    // Attributes: name="value" pairs.
    while (k < tag.size()) {
      while (k < tag.size() && std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
      if (k >= tag.size()) break;
      const std::size_t eq = tag.find('=', k);
      if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"')
        fail("attribute without a quoted value in <" + name + ">");
      const std::string an = tag.substr(k, eq - k);
      const std::size_t close = tag.find('"', eq + 2);
      if (close == std::string::npos) fail("unterminated attribute value");
      const std::string av = decode(tag.substr(eq + 2, close - eq - 2));
      if (an == "class") cls = av;
      k = close + 1;
    }
    if (open.empty()) {
      if (++roots > 1) fail("more than one root element");
    }
    ++out.elements[name];
    if (!cls.empty()) ++out.classes[name + "." + cls];
    if (!self) open.push_back(name);
    i = e + 1;
  }
  if (!open.empty()) fail("unclosed <" + open.back() + ">");
  if (roots != 1) fail("no root element");
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace voxtest
