// The layer list of docs/ARCHITECTURE.md ("Layers") is the library's include order, read from
// the document itself: a file of a layer includes only its own layer and those below it, a
// family's folder no other family's headers, and only the named places include the system
// libraries' headers. A change that breaks the design fails here rather than in a review.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = fs::path(ATTN_TESTS_DIR).parent_path();   // the source tree

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lib layers of the "Layers" section, bottom first.
std::vector<std::string> documented_layers() {
  const std::string doc = read(kRoot / "docs/ARCHITECTURE.md");
  const size_t section = doc.find("## Layers");
  REQUIRE(section != std::string::npos);
  const size_t begin = doc.find("```", section), end = doc.find("```", begin + 3);
  std::istringstream block(doc.substr(begin, end - begin));
  std::vector<std::string> layers;
  bool in_lib = false;
  const std::regex layer(R"(^  ([a-z]+) {2,}\S)");
  for (std::string line; std::getline(block, line);) {
    if (line.starts_with("lib/  (libattn")) in_lib = true;
    std::smatch m;
    if (in_lib && std::regex_search(line, m, layer)) layers.insert(layers.begin(), m[1].str());
  }
  return layers;
}

struct Source {
  fs::path path;
  std::string layer;    // the folder under lib/include/attn or lib/src
  std::string family;   // for files of families/<name>/: the name
};

std::vector<Source> library_sources() {
  std::vector<Source> out;
  for (const fs::path& root : {kRoot / "lib/include/attn", kRoot / "lib/src"})
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".hpp" && ext != ".cpp" && ext != ".in")) continue;
      const fs::path rel = fs::relative(entry.path(), root);
      auto part = rel.begin();
      Source s{entry.path(), part->string(), ""};
      if (s.layer == "families" && std::distance(rel.begin(), rel.end()) > 2) s.family = (++part)->string();
      out.push_back(s);
    }
  return out;
}

}  // namespace

TEST_CASE("architecture: each layer includes only itself and the layers below it, a family no other family", "[unit]") {
  const std::vector<std::string> layers = documented_layers();
  REQUIRE(layers.size() >= 10);
  CHECK(layers.front() == "core");
  std::map<std::string, size_t> rank;
  for (size_t k = 0; k < layers.size(); ++k) rank[layers[k]] = k;
  const std::regex include(R"re(#include "attn/([a-z_]+)/([a-z_0-9]+)?)re");
  size_t files = 0, includes = 0;
  for (const Source& s : library_sources()) {
    INFO(s.path.string());
    REQUIRE(rank.count(s.layer) == 1);   // a folder the document does not list
    ++files;
    const std::string text = read(s.path);
    for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
      const std::string to = (*it)[1].str();
      INFO("includes attn/" << to << "/" << (*it)[2].str());
      REQUIRE(rank.count(to) == 1);
      CHECK(rank.at(to) <= rank.at(s.layer));
      if (!s.family.empty() && to == "families") {
        const std::string other = (*it)[2].str();
        CHECK((other == s.family || other == "registry"));
      }
      ++includes;
    }
  }
  CHECK(files > 100);
  CHECK(includes > 500);
}

TEST_CASE("architecture: only the named places include CBLAS, HDF5, MPI and Boost", "[unit]") {
  for (const Source& s : library_sources()) {
    INFO(s.path.string());
    const std::string text = read(s.path);
    const std::string rel = fs::relative(s.path, kRoot).string();
    if (text.find("#include <cblas.h>") != std::string::npos) CHECK(rel.starts_with("lib/src/blas/"));
    if (text.find("#include <hdf5.h>") != std::string::npos) CHECK(rel.starts_with("lib/src/io/"));
    if (text.find("#include <mpi.h>") != std::string::npos) CHECK(rel == "lib/src/dist/mpi_world.cpp");
    CHECK(text.find("#include <boost") == std::string::npos);
  }
}
