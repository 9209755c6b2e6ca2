// Fixture files of the op tests (tests/ops/fixtures, written by tests/ops/gen_*_fixtures.py):
// index files of "<op> key=value ..." lines, and raw little-endian arrays. For targets that
// define VOX_FIXTURE_DIR (the ops tests).
#pragma once

#include <cstddef>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace vox_test {

/// One line of a fixture index: the op (first word) and its key=value pairs.
struct index_line {
  std::string line;  // the whole line, for failure messages
  std::string op;
  std::map<std::string, std::string> kv;
};

/// The lines of VOX_FIXTURE_DIR/`name`, without blank lines and '#' comments.
inline std::vector<index_line> read_index(const std::string& name) {
  std::vector<index_line> out;
  std::ifstream f(std::string(VOX_FIXTURE_DIR) + "/" + name);
  EXPECT_TRUE(f.good()) << "cannot read " << name;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    index_line c;
    c.line = line;
    std::istringstream s(line);
    s >> c.op;
    for (std::string tok; s >> tok;) {
      const auto eq = tok.find('=');
      c.kv[tok.substr(0, eq)] = eq == std::string::npos ? std::string() : tok.substr(eq + 1);
    }
    out.push_back(std::move(c));
  }
  return out;
}

/// `n` values of V from the raw little-endian file VOX_FIXTURE_DIR/`name` (the host and the
/// device of both backends are little-endian).
template <class V>
std::vector<V> read_raw(const std::string& name, std::size_t n) {
  std::vector<V> v(n);
  std::ifstream f(std::string(VOX_FIXTURE_DIR) + "/" + name, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(V)));
  EXPECT_TRUE(f.good()) << "cannot read " << name;
  return v;
}

/// "1,2.5,3" as {1, 2.5, 3}.
inline std::vector<double> numbers(const std::string& s) {
  std::vector<double> v;
  std::istringstream in(s);
  for (std::string tok; std::getline(in, tok, ',');) v.push_back(std::stod(tok));
  return v;
}

}  // namespace vox_test
